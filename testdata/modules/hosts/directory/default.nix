# The host directory: lldap and authelia as modular services, each run as a
# role from its service's image, behind the nginx of the main pod; as
# deployment-k8s-hosts runs them.
{ ... }:
{
  imports = [
    ../common
    ./lldap.nix
    ./authelia.nix
    ./nginx.nix
    ./request.nix
  ];

  networking.hostName = "directory";
  networking.firewall.allowedTCPPorts = [ 80 443 ];
}
