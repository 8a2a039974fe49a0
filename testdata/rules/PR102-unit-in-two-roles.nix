# want: PR102 unit mastodon-sidekiq-all at PR102-unit-in-two-roles.nix:6:31
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles = {
    sidekiq = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
    sidekiq-default = { replicas = 1; units = [ "mastodon-sidekiq-all" ]; };
  };
}
