# field, encoding and variable given as null next to a template are unset.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."db.env" = {
    field = null;
    encoding = null;
    variable = null;
  };
}
