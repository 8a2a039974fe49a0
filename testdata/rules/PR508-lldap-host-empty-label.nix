# The Service's name followed by an empty label is no name.
# want: PR508 role lldap at PR508-lldap-host-empty-label.nix:4:12
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "node-lldap..svc"; }
