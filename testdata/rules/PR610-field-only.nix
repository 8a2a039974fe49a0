# A field alone, with no encoding and no variable, says what to write.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt = lib.replace { path = "secret/data/lldap/jwt"; field = "value"; };
}
