# Metrics on a port open by a TCP range, and on a role of a modular service
# (no firewall of the node there).
let lib = import ../lib.nix; in
lib.node {
  networking.firewall.allowedTCPPortRanges = [ { from = 9390; to = 9399; } ];
  fediversity.podRoles.roles.worker.metrics = { port = 9394; path = "/metrics"; };
  fediversity.podRoles.roles.authelia.metrics = { port = 9959; };
}
