# want: PR605 role worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.path = "metrics";
}
