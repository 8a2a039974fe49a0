# A role of a modular service runs no firewall of the node: its ports need
# not be open on the node (6360, 17170 and 8443 are not).
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 17170; } { port = 8443; } ];
}
