# mastodon's node module for pod roles (FR-004): the units of each role and
# of the main pod, named from mastodon's own options and never from
# config.systemd.services (FR-007).
{ config, lib, ... }:
let
  cfg = config.services.mastodon;
in
{
  config = lib.mkIf cfg.enable {
    fediversity.podRoles = {
      roles.sidekiq = {
        units = lib.mapAttrsToList (name: _: "mastodon-sidekiq-${name}") cfg.sidekiqProcesses;
        metrics.port = cfg.metricsPort;
      };
      mainUnits = [
        "mastodon-init-dirs"
        "mastodon-init-db"
        "mastodon-web"
        "redis-mastodon"
      ]
      ++ lib.optional cfg.mediaAutoRemove.enable "mastodon-media-auto-remove"
      ++ map (i: "mastodon-streaming-${toString i}") (lib.range 1 cfg.streamingProcesses);
    };
  };
}
