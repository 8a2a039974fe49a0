# want: PR606 port 6360/TCP at PR606-duplicate-port.nix:4:48
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 17170; } { port = 6360; protocol = "TCP"; } ];
}
