# want: PR607 role sidekiq_all
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq_all = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
}
