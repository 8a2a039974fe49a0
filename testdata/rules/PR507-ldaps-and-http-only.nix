# LDAPS on 6360 and 636, the HTTP port 17170 (Known Deviations), and 3890
# over UDP, which is no LDAP: nothing plain on the Service.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.ports = [ { port = 6360; } { port = 636; } { port = 17170; } { port = 3890; protocol = "UDP"; } ];
}
