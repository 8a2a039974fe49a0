# want: PR303 secret db.env at PR303-template-with-encoding-and-variable.nix:5:5
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."db.env" = {
    encoding = "base64";
    variable = "LLDAP_DATABASE_URL";
  };
}
