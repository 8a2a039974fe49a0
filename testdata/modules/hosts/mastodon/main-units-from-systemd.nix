# A "clever" node module: the main pod's units are every unit of mastodon
# but its sidekiq ones, read from config.systemd.services. On k8s-pod.nix,
# whose conditions come from this very list, that is an infinite recursion
# (FR-007).
{ config, lib, ... }:
{
  fediversity.podRoles.mainUnits = lib.mkForce (
    lib.filter (name: lib.hasPrefix "mastodon-" name && !lib.hasPrefix "mastodon-sidekiq-" name)
      (lib.attrNames config.systemd.services)
    ++ [ "redis-mastodon" ]
  );
}
