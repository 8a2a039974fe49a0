# 1 and 65535 are the two ends of the range of ports.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.ports = [ { port = 9091; } { port = 1; protocol = "UDP"; } ];
  fediversity.podRoles.roles.authelia.metrics = { port = 65535; };
}
