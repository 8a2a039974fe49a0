# want: PR504 role lldap at PR504-lldap-without-ca-file.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.tls.caFile = null;
}
