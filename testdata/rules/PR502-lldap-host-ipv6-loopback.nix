# want: PR502 role lldap at PR502-lldap-host-ipv6-loopback.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.lldap.host = "[::1]";
}
