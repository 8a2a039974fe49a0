# want: PR608 secret jwt at PR608-secret-without-path.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.path = null;
}
