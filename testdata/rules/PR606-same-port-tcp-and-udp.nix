# 443 over TCP and over UDP (HTTP/3), and a UDP port with the number of the
# metrics port: each is a port of its own.
let lib = import ../lib.nix; in
lib.node {
  networking.firewall.allowedUDPPorts = [ 443 9100 ];
  fediversity.podRoles.roles.worker.ports = [
    { port = 443; }
    { port = 443; protocol = "UDP"; }
    { port = 9100; protocol = "UDP"; }
  ];
}
