# want: PR502 role lldap at PR502-lldap-host-127.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.host = "127.0.0.1";
}
