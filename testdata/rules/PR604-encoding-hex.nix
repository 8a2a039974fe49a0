# OpenBao's agent has no decoder of hex: no encoding can name it.
# want: PR604 secret jwt at PR604-encoding-hex.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets.jwt.encoding = "hex";
}
