# want: PR402 role worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.port = 9394;
}
