# A disabled unit still exists (systemd.services.sshd): listing it is no
# unknown unit.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "sshd" ];
}
