# want: PR504 role lldap
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.tls.enable = false;
}
