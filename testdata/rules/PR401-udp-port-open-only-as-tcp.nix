# HTTP/3 on 443/UDP, but the firewall opens 443 for TCP only.
# want: PR401 role worker at PR401-udp-port-open-only-as-tcp.nix:5:65
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 443; protocol = "UDP"; } ];
}
