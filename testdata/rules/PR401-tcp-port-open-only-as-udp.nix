# 5005 is in the UDP range only.
# want: PR401 role worker at PR401-tcp-port-open-only-as-udp.nix:5:49
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 5005; protocol = "TCP"; } ];
}
