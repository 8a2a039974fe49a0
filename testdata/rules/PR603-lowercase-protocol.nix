# A protocol is "TCP" or "UDP", in capitals. The port is not checked against
# the firewall (PR401) since its protocol is unknown.
# want: PR603 port 443/tcp at PR603-lowercase-protocol.nix:6:49
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; protocol = "tcp"; } { port = 5001; protocol = "UDP"; } ];
}
