# A mastodon node deployed on the k8s method: its config as evaluated on
# k8s-pod.nix, written against docs/node-surface.md. The application
# requests the role sidekiq with 2 replicas of the node's image; the web and
# streaming units, the one-time units and nginx stay in the main pod.
{
  networking.hostName = "mastodon";
  networking.firewall = {
    allowedTCPPorts = [ 80 443 ];
    # the sidekiq exporter, scraped by the main pod over the pod network
    interfaces.eth0.allowedTCPPorts = [ 9394 ];
  };

  systemd.services = {
    mastodon-init-dirs = { };
    mastodon-init-db = { };
    mastodon-web = { };
    mastodon-streaming-1 = { };
    mastodon-streaming-2 = { };
    mastodon-sidekiq-all = { };
    mastodon-media-auto-remove = { };
    nginx = { };
    "acme-mastodon.example.org" = { };
    "acme-order-renew-mastodon.example.org" = { };
    prometheus-node-exporter = { };
    nscd = { };
    systemd-tmpfiles-resetup = { };
    # switched off on this node: needs no class
    redis-mastodon.enable = false;
  };

  fediversity.k8sPod = {
    enable = true;
    platformUnits = [ "nscd" "systemd-tmpfiles-resetup" ];
  };

  fediversity.podRoles = {
    roles.sidekiq = {
      replicas = 2;
      units = [ "mastodon-sidekiq-all" ];
      metrics = { port = 9394; };
    };
    mainUnits = [
      "mastodon-init-dirs"
      "mastodon-init-db"
      "mastodon-web"
      "mastodon-streaming-1"
      "mastodon-streaming-2"
      "mastodon-media-auto-remove"
      "nginx"
      "acme-mastodon.example.org"
      "acme-order-renew-mastodon.example.org"
    ];
    sharedUnits = [ "prometheus-node-exporter" ];
  };
}
