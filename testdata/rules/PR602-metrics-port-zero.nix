# want: PR602 port 0/TCP at PR602-metrics-port-zero.nix:4:51
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.metrics = { port = 0; };
}
