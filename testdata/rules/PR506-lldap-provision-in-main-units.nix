# Role lldap runs lldap with its companion, which does the work of
# lldap-provision; the main pod must not start the unit.
# want: PR506 unit lldap-provision at PR506-lldap-provision-in-main-units.nix:7:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.lldap-provision = { };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "lldap-provision" ];
}
