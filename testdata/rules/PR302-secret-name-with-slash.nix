# The name of the secret is a path, not the name of a file (US2-5).
# want: PR302 secret ldap/bind-password at PR302-secret-name-with-slash.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."ldap/bind-password" = {
    path = "secret/data/lldap/bind";
    field = "password";
  };
}
