# want: PR605 role worker at PR605-metrics-path-relative.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.path = "metrics";
}
