# want: PR102 unit mastodon-sidekiq-all
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles = {
    sidekiq = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
    sidekiq-default = { replicas = 1; units = [ "mastodon-sidekiq-all" ]; };
  };
}
