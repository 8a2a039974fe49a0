# The unit authelia is in mainUnits while role authelia runs the service's
# image: two authelias would run, one in the main pod.
# want: PR105 unit authelia at PR105-service-unit-in-main-units.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.authelia = { };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "authelia" ];
}
