# NixOS makes a unit for each modular service; role lldap runs lldap from
# the service's image, so the node's own unit lldap must not start in any
# pod of the node's image (US1-6). Enabled and in no list, it is refused
# (by PR105, which says to disable it; PR103, which would say to list it,
# leaves it alone).
# want: PR105 unit lldap at PR105-service-unit-enabled-unlisted.nix:8:12
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap = { }; }
