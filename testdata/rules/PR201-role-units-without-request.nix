# The node module lists the units of sidekiq, but no request gives it
# replicas (US2-3).
# want: PR201 role sidekiq at PR201-role-units-without-request.nix:7:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq.units = [ "mastodon-sidekiq-all" ];
}
