# What every host of the platform has: the units of NixOS that podroles'
# checks meet on every node, SSH (not in a pod), and the exporter that runs
# in every pod.
{ config, lib, ... }:
{
  imports = [ ./exporter.nix ];

  systemd.services = {
    nscd = {
      description = "Name Service Cache Daemon";
      wantedBy = [ "multi-user.target" ];
      serviceConfig.ExecStart = "nscd --foreground";
    };
    systemd-tmpfiles-resetup = {
      description = "Re-setup tmpfiles on a system that is already running";
      serviceConfig.Type = "oneshot";
    };
    sshd = {
      description = "SSH Daemon";
      wantedBy = [ "multi-user.target" ];
      serviceConfig.ExecStart = "sshd -D";
      # A pod is reached through kubectl, never through SSH.
      enable = lib.mkIf config.fediversity.k8sPod.enable false;
    };
  };

  networking.firewall.allowedTCPPorts = [ 22 ];
}
