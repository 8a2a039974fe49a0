# A unit that writes shared data, moved from mainUnits to sharedUnits.
# want: PR104 unit app-init-db
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.mainUnits = [ "app-web" "nginx" "lldap-publish-roles" ];
  fediversity.podRoles.sharedUnits = [ "node-exporter" "app-init-db" ];
}
