# The host names the role's Service, but a role with no ports has no
# Service.
# want: PR508 role lldap at PR508-lldap-role-without-ports.nix:5:12
let lib = import ../lib.nix; in
lib.node { fediversity.podRoles.roles.lldap.ports = [ ]; }
