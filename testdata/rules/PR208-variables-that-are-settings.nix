# Settings and the paths of files: a name that ends in KEY with a path, a
# PASSWORD variable left empty, a URL without a password.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.environment = {
    LLDAP_KEY_FILE = "/run/secrets/key-seed";
    LLDAP_SMTP_OPTIONS__PASSWORD = "";
    LLDAP_HTTP_URL = "https://node-lldap.ns.svc:17170";
    LLDAP_LDAPS_OPTIONS__ENABLED = "true";
    LLDAP_DATABASE_URL_FILE = "/run/secrets/db.env";
  };
}
