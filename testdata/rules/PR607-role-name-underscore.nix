# want: PR607 role sidekiq_all at PR607-role-name-underscore.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq_all = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
}
