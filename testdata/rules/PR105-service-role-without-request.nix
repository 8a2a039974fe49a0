# Role lldap runs lldap from the service's image but nothing requests it,
# so no pod of it runs: the node's unit lldap is the only lldap, and may run
# in the main pod.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.lldap = { };
  fediversity.podRoles.roles.lldap.replicas = null;
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "lldap" ];
}
