# want: PR608 secret jwt
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.path = null;
}
