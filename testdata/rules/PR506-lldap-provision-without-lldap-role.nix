# No role runs lldap (lldap stays in the node): lldap-provision belongs in
# the main pod.
let lib = import ../lib.nix; in
lib.node {
  systemd.services = { lldap = { }; lldap-provision = { }; };
  fediversity.podRoles.roles.lldap = lib.replace { };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "lldap" "lldap-provision" ];
}
