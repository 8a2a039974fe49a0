# want: PR606 port 6360/TCP
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 17170; } { port = 6360; protocol = "TCP"; } ];
}
