# The metrics port 9100 is also given as a port of the role.
# want: PR606 port 9100/TCP
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 9100; } ];
}
