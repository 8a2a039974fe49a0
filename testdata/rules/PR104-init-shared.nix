# A unit that writes shared data, moved from mainUnits to sharedUnits.
# want: PR104 unit app-init-db at PR104-init-shared.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.mainUnits = [ "app-web" "nginx" "lldap-publish-roles" ];
  fediversity.podRoles.sharedUnits = [ "node-exporter" "app-init-db" ];
}
