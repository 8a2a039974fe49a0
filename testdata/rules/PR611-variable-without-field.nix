# A variable is read from a field that holds an environment file; here
# there is no field.
# want: PR611 secret bind-password at PR611-variable-without-field.nix:6:109
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets."bind-password" = lib.replace { path = "secret/data/lldap/bind"; variable = "LLDAP_LDAP_USER_PASS"; };
}
