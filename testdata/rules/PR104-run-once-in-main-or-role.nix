# Run-once units in mainUnits or in a role are where FR-006 wants them; a
# shared unit whose name only contains "init" inside a word is no such unit.
let lib = import ../lib.nix; in
lib.node {
  systemd.services = {
    "acme-example.org" = { };
    mastodon-media-migrate = { };
    nginx-reinitialize-logs = { };
  };
  fediversity.podRoles.roles.worker.units = [ "app-worker" "mastodon-media-migrate" ];
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "acme-example.org" ];
  fediversity.podRoles.sharedUnits = [ "node-exporter" "nginx-reinitialize-logs" ];
}
