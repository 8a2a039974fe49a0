# A typo: 171700 for 17170.
# want: PR602 port 171700/TCP at PR602-port-out-of-range.nix:5:65
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 171700; } ];
}
