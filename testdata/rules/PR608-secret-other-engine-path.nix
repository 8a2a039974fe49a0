# A secret of another engine has the path of that engine.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."db.env".path = "database/static-creds/lldap";
}
