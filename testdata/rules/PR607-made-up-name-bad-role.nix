# The node is named after its file, but a requested role whose own name
# can be no part of a DNS-1123 label is still refused.
# want: PR607 role Worker_2 at PR607-made-up-name-bad-role.nix:7:3
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "";
  fediversity.podRoles.roles.Worker_2 = { replicas = 1; units = [ "app-web" ]; };
  fediversity.podRoles.mainUnits = [ "app-init-db" "nginx" "lldap-publish-roles" ];
}
