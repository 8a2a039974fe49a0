# want: PR102 unit mastodon-sidekiq-all at PR102-unit-in-role-and-main.nix:5:56
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "mastodon-sidekiq-all" ];
}
