# want: PR101 unit app-workr at PR101-unknown-unit.nix:6:3
# want: PR101 unit nginx.service at PR101-unknown-unit.nix:7:3
# want: PR103 unit app-worker at ../lib.nix:31:7
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.units = [ "app-workr" ];
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx.service" "lldap-publish-roles" ];
  # nginx is then in no list either:
  fediversity.k8sPod.platformUnits = [ "nscd" "nginx" ];
}
