# On k8s-pod.nix the names are checked even with no request (US2-1).
# want: PR101 unit ngnix
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles = lib.replace { };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "ngnix" "lldap-publish-roles" ];
}
