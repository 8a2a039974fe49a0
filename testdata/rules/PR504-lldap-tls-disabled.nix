# want: PR504 role lldap at PR504-lldap-tls-disabled.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.tls.enable = false;
}
