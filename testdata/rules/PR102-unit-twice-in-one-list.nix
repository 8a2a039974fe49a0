# A unit named twice in the same list is in one list only.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.units = [ "app-worker" "app-worker" ];
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "nginx" "lldap-publish-roles" ];
}
