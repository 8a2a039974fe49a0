# The application module of mastodon, shaped as the one in nixpkgs: its
# units follow from its own options.
{ config, lib, ... }:
let
  inherit (lib) mkOption mkIf types;
  cfg = config.services.mastodon;
in
{
  options.services.mastodon = {
    enable = lib.mkEnableOption "mastodon";
    streamingProcesses = mkOption { type = types.ints.positive; default = 1; description = "How many streaming processes run."; };
    sidekiqProcesses = mkOption {
      type = types.attrsOf (types.submodule {
        options.jobClasses = mkOption { type = types.listOf types.str; default = [ ]; description = "The queues; all of them when empty."; };
        options.threads = mkOption { type = types.int; default = 5; description = "Threads of the process."; };
      });
      default = { all = { }; };
      description = "The sidekiq processes, by name.";
    };
    mediaAutoRemove.enable = mkOption { type = types.bool; default = true; description = "Whether a timer removes old media."; };
    metricsPort = mkOption { type = types.port; default = 9394; description = "The port of sidekiq's Prometheus exporter."; };
  };

  config = mkIf cfg.enable {
    systemd.services = lib.mkMerge [
      {
        mastodon-init-dirs = {
          description = "Mastodon: set up its directories";
          serviceConfig.Type = "oneshot";
          script = "mkdir -p /var/lib/mastodon/public-system";
        };
        mastodon-init-db = {
          description = "Mastodon: migrate the database";
          after = [ "mastodon-init-dirs.service" ];
          serviceConfig.Type = "oneshot";
          script = "rails db:migrate";
        };
        mastodon-web = {
          description = "Mastodon: web";
          wantedBy = [ "multi-user.target" ];
          requires = [ "mastodon-init-db.service" ];
          serviceConfig.ExecStart = "puma -C config/puma.rb";
        };
        mastodon-media-auto-remove = mkIf cfg.mediaAutoRemove.enable {
          description = "Mastodon: remove old media";
          startAt = "daily";
          script = "tootctl media remove --days 30";
        };
        redis-mastodon = {
          description = "Redis of mastodon";
          wantedBy = [ "multi-user.target" ];
          serviceConfig.ExecStart = "redis-server /run/redis-mastodon/redis.conf";
        };
      }
      (lib.mapAttrs' (name: process: lib.nameValuePair "mastodon-sidekiq-${name}" {
        description = "Mastodon: sidekiq ${name}";
        wantedBy = [ "multi-user.target" ];
        environment.MALLOC_ARENA_MAX = "2";
        script = "sidekiq -c ${toString process.threads}" + lib.concatMapStrings (q: " -q ${q}") process.jobClasses;
      }) cfg.sidekiqProcesses)
      (lib.listToAttrs (map (i: lib.nameValuePair "mastodon-streaming-${toString i}" {
        description = "Mastodon: streaming ${toString i}";
        wantedBy = [ "multi-user.target" ];
        serviceConfig.ExecStart = "node streaming/index.js";
      }) (lib.range 1 cfg.streamingProcesses)))
    ];

    networking.firewall.interfaces.eth0.allowedTCPPorts = [ cfg.metricsPort ];
  };
}
