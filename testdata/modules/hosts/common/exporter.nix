# The Prometheus node exporter: each pod exports its own metrics.
{ lib, ... }:
{
  systemd.services.node-exporter = {
    description = "Prometheus node exporter";
    wantedBy = [ "multi-user.target" ];
    script = "exec node_exporter --web.listen-address=:9100";
  };
  networking.firewall.interfaces.eth0.allowedTCPPorts = [ 9100 ];
  fediversity.podRoles.sharedUnits = [ "node-exporter" ];
}
