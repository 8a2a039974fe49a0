# want: PR102 unit node-exporter at PR102-unit-in-main-and-shared.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "node-exporter" ];
}
