# A secret with a path and nothing else: which field of the KV entry?
# want: PR610 secret jwt at PR610-secret-without-field.nix:5:64
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt = lib.replace { path = "secret/data/lldap/jwt"; encoding = "base64"; };
}
