# A role may serve its metrics on one of its own ports (FR-010a refuses
# nothing of the kind): no finding.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 9100; } ];
}
