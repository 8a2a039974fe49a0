# One secret is enough for a companion.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets = lib.replace {
    jwt = { path = "secret/data/lldap/jwt"; field = "value"; encoding = "base64"; restart = true; };
  };
}
