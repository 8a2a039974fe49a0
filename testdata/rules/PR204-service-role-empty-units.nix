# A role of a service with an explicitly empty list of units.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.units = [ ];
  fediversity.podRoles.roles.authelia.units = [ ];
}
