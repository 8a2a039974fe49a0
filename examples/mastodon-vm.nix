# A mastodon node on another method (a virtual machine, not k8s-pod.nix):
# the application still requests the role sidekiq and its node module still
# names the units, so the FR-008 rules apply (FR-013), but one machine runs
# every unit and nothing else is asked of the roles.
{
  networking.hostName = "mastodon-vm";
  networking.firewall.allowedTCPPorts = [ 22 80 443 ];

  systemd.services = {
    mastodon-init-dirs = { };
    mastodon-init-db = { };
    mastodon-web = { };
    mastodon-streaming-1 = { };
    mastodon-sidekiq-all = { };
    mastodon-media-auto-remove = { };
    nginx = { };
    postgresql = { };
    redis-mastodon = { };
    sshd = { };
  };

  fediversity.podRoles = {
    roles.sidekiq = {
      replicas = 2;
      units = [ "mastodon-sidekiq-all" ];
    };
    mainUnits = [
      "mastodon-init-dirs"
      "mastodon-init-db"
      "mastodon-web"
      "mastodon-streaming-1"
      "mastodon-media-auto-remove"
      "nginx"
    ];
  };
}
