# The host mastodon: the application, the node module that places its units
# in pods, and the request of the platform's policy.
{ ... }:
{
  imports = [
    ../common
    ./mastodon.nix
    ./pod-roles.nix
    ./request.nix
  ];

  networking.hostName = "mastodon";
  networking.domain = "social.example.org";
  networking.firewall.allowedTCPPorts = [ 80 443 ];

  services.mastodon = {
    enable = true;
    streamingProcesses = 2;
    sidekiqProcesses = {
      all = { jobClasses = [ ]; threads = 10; };
    };
  };
}
