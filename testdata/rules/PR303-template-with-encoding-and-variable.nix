# want: PR303 secret db.env
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."db.env" = {
    encoding = "base64";
    variable = "LLDAP_DATABASE_URL";
  };
}
