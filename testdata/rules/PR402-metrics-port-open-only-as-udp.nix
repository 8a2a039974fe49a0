# Metrics are scraped over TCP; 5002 is open for UDP only.
# want: PR402 role worker at PR402-metrics-port-open-only-as-udp.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.metrics.port = 5002;
}
