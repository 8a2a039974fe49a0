# lldap-provision enabled and in no list, on a node whose worker role runs
# the node's image: refused for what it is (PR506, disable it), not as a
# unit in no list (PR103 would say to list it).
# want: PR506 unit lldap-provision at PR506-lldap-provision-in-no-list.nix:6:12
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap-provision = { }; }
