# LDAP's own port, 389, is plain LDAP too.
# want: PR507 port 389/TCP at PR507-ldap-port-389.nix:5:64
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 636; } { port = 389; } ];
}
