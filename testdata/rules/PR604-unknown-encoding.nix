# want: PR604 secret jwt at PR604-unknown-encoding.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.encoding = "base64url";
}
