# The unit lldap listed in the role that runs the image of lldap (US2-4).
# want: PR204 role lldap at PR204-service-role-with-units.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.lldap = { };
  fediversity.podRoles.roles.lldap.units = [ "lldap" ];
}
