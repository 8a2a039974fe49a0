# An address is no Service name, and the role's certificate is for the
# name.
# want: PR508 role lldap at PR508-lldap-host-ip.nix:5:12
let lib = import ../lib.nix; in
lib.node { fediversity.lldap.host = "10.43.0.17"; }
