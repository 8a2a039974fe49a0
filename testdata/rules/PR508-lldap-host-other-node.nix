# fediversity.lldap.host names the Service of another node's role: readers
# would reach a directory that is not this node's.
# want: PR508 role lldap at PR508-lldap-host-other-node.nix:5:12
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "directory-lldap.ns.svc.cluster.local"; }
