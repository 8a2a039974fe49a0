# lldap-provision enabled and in no list, on a node whose worker role runs
# the node's image: refused for what it is (PR506, disable it), not as a
# unit in no list (PR103 would say to list it).
# want: PR506 unit lldap-provision
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap-provision = { }; }
