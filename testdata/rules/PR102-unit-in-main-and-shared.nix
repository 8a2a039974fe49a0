# want: PR102 unit node-exporter
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "node-exporter" ];
}
