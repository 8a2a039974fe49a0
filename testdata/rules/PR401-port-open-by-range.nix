# 8000 and 8010 are the two ends of a TCP range; 5010/UDP the end of the
# UDP range.
let lib = import ../lib.nix; in
lib.node {
  networking.firewall.allowedTCPPortRanges = [ { from = 8000; to = 8010; } ];
  fediversity.podRoles.roles.worker.ports = [
    { port = 8000; }
    { port = 8010; }
    { port = 5010; protocol = "UDP"; }
  ];
}
