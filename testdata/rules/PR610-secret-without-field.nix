# A secret with a path and nothing else: which field of the KV entry?
# want: PR610 secret jwt
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt = lib.replace { path = "secret/data/lldap/jwt"; encoding = "base64"; };
}
