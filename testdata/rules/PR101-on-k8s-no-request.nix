# On k8s-pod.nix the names are checked even with no request (US2-1).
# want: PR101 unit ngnix at PR101-on-k8s-no-request.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles = lib.replace { };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "ngnix" "lldap-publish-roles" ];
}
