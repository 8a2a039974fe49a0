# OpenBao's agent has no decoder of hex: no encoding can name it.
# want: PR604 secret jwt
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.encoding = "hex";
}
