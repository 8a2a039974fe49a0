# A metrics path of its own, absolute, and the default /metrics elsewhere.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.path = "/_status/metrics";
  fediversity.podRoles.roles.authelia.metrics = { port = 9959; };
}
