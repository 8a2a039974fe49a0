# want: PR208 service lldap at PR208-secret-looking-variables.nix:8:5
# want: PR208 service authelia at PR208-secret-looking-variables.nix:13:3
# A secret's value given to the image: by its name, as a PEM block, in a
# URL's password.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.environment = {
    LLDAP_JWT_SECRET = "aSecretOfTwentyChars";
    LLDAP_LDAPS_OPTIONS__CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    LLDAP_KEY_FILE = "/run/secrets/key-seed";
    LLDAP_LDAPS_OPTIONS__ENABLED = "true";
  };
  fediversity.podRoles.services.authelia.environment.AUTHELIA_STORAGE_POSTGRES_URL =
    "postgres://authelia:hunter2@postgres/authelia";
}
