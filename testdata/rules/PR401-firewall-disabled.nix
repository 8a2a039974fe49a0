# With the firewall off every port is open.
let lib = import ../lib.nix; in
lib.node {
  networking.firewall.enable = false;
  fediversity.podRoles.roles.worker.ports = [ { port = 8080; } { port = 3478; protocol = "UDP"; } ];
}
