# The host names the role's Service, but a role with no ports has no
# Service.
# want: PR508 role lldap
let lib = import ../lib.nix; in
lib.node { fediversity.podRoles.roles.lldap.ports = lib.replace [ ]; }
