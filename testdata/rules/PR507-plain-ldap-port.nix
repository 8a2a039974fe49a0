# lldap's plain LDAP port on the role's Service (SC-004: only LDAPS).
# want: PR507 port 3890/TCP at PR507-plain-ldap-port.nix:5:65
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 3890; } { port = 17170; } ];
}
