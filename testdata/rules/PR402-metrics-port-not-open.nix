# want: PR402 role worker at PR402-metrics-port-not-open.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.port = 9394;
}
