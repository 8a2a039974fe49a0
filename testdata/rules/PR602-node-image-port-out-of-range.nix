# A typo in a role of the node's image: 84430 for 8443, and metrics port 0.
# PR602 names both; PR401 and PR402 do not ask to open them in the firewall,
# which no firewall can.
# want: PR602 port 84430/TCP at PR602-node-image-port-out-of-range.nix:8:65
# want: PR602 port 0/TCP at PR602-node-image-port-out-of-range.nix:9:49
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 84430; } ];
  fediversity.podRoles.roles.worker.metrics = { port = 0; };
}
