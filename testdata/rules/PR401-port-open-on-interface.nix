# Ports open on one interface only count as open in the pod.
let lib = import ../lib.nix; in
lib.node {
  networking.firewall.interfaces.wg0 = {
    allowedTCPPorts = [ 8448 ];
    allowedUDPPortRanges = [ { from = 51820; to = 51821; } ];
  };
  fediversity.podRoles.roles.worker.ports = [ { port = 8448; } { port = 51821; protocol = "UDP"; } ];
}
