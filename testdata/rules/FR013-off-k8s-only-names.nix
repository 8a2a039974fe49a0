# FR-013: off k8s-pod.nix, with a request, only the assertions on the names
# (FR-008) apply. This node also has what the k8s rules refuse: a unit in no
# list (PR103), a run-once unit in sharedUnits (PR104), a role with units
# and no request (PR201), a role with an unknown service (PR203), secrets
# on a role of the node's image (PR301), a port the firewall does not open
# (PR401), lldap on localhost (PR502) and authelia with no smtp (PR514).
# want: PR101 unit mastodon-sidekiq at FR013-off-k8s-only-names.nix:18:5
# want: PR102 unit node-exporter at FR013-off-k8s-only-names.nix:24:5
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  systemd.services = {
    mastodon-sidekiq-all = { };
    mastodon-media-auto-remove = { };
    "acme-example.org" = { };
  };
  fediversity.podRoles = {
    roles.sidekiq.units = [ "mastodon-sidekiq" ];
    roles.worker = {
      ports = [ { port = 443; } { port = 8080; } ];
      secrets."app.env" = { path = "secret/data/app/env"; field = "env"; };
    };
    roles.authelia.service = "authlia";
    mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "mastodon-sidekiq-all" "node-exporter" ];
    sharedUnits = [ "node-exporter" "acme-example.org" ];
  };
  fediversity.lldap.host = "localhost";
  fediversity.authelia.smtp = null;
}
