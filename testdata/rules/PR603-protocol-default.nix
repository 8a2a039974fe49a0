# A port without a protocol is TCP; UDP in capitals is fine.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 17170; protocol = "TCP"; } { port = 3478; protocol = "UDP"; } ];
}
