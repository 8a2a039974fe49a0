# want: PR101 unit app-workr
# want: PR101 unit nginx.service
# want: PR103 unit app-worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.units = [ "app-workr" ];
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx.service" "lldap-publish-roles" ];
  # nginx is then in no list either:
  fediversity.k8sPod.platformUnits = [ "nscd" "nginx" ];
}
