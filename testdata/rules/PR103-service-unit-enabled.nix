# NixOS makes a unit for each modular service; role lldap runs lldap from
# the service's image, so the node's own unit lldap must not start in any
# pod of the node's image (US1-6). Enabled and in no list, it is refused,
# and the message says to disable it.
# want: PR103 unit lldap at PR103-service-unit-enabled.nix:7:12
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap = { }; }
