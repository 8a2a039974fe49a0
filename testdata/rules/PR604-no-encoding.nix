# A field with no encoding (null) is taken as it is.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.encoding = null;
}
