# An address is no Service name, and the role's certificate is for the
# name.
# want: PR508 role lldap
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "10.43.0.17"; }
