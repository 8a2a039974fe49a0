# A renamed unit (mastodon-sidekiq became mastodon-sidekiq-all) is still
# named in a role and in mainUnits: one finding names both lists,
# and the unit is in two lists (PR102) as well.
# want: PR101 unit mastodon-sidekiq at PR101-unknown-unit-in-two-lists.nix:13:5
# want: PR102 unit mastodon-sidekiq at PR101-unknown-unit-in-two-lists.nix:13:5
# want: PR103 unit mastodon-sidekiq-all at PR101-unknown-unit-in-two-lists.nix:10:3
# The real unit mastodon-sidekiq-all is then in no list, hence PR103.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq = {
    replicas = 2;
    units = [ "mastodon-sidekiq" ];
  };
  fediversity.podRoles.mainUnits = [ "app-web" "app-init-db" "nginx" "lldap-publish-roles" "mastodon-sidekiq" ];
}
