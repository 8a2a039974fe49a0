# want: PR502 role lldap
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.host = "[::1]";
}
