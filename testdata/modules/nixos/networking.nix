# networking.hostName and networking.firewall as NixOS declares them, less
# what podroles never reads. As in NixOS, the global port lists also apply
# to the interface "default".
{ config, lib, ... }:
let
  inherit (lib) mkOption types;
  cfg = config.networking.firewall;

  portOptions = {
    allowedTCPPorts = mkOption { type = types.listOf types.port; default = [ ]; description = "TCP ports open to incoming connections."; };
    allowedUDPPorts = mkOption { type = types.listOf types.port; default = [ ]; description = "UDP ports open to incoming connections."; };
    allowedTCPPortRanges = mkOption { type = types.listOf (types.attrsOf types.port); default = [ ]; example = [ { from = 8999; to = 9003; } ]; description = "Ranges of open TCP ports."; };
    allowedUDPPortRanges = mkOption { type = types.listOf (types.attrsOf types.port); default = [ ]; description = "Ranges of open UDP ports."; };
  };
in
{
  options.networking = {
    hostName = mkOption {
      type = types.strMatching "^$|^[[:alnum:]]([[:alnum:]_-]{0,61}[[:alnum:]])?$";
      default = "nixos";
      description = "The name of the machine.";
    };
    domain = mkOption { type = types.nullOr types.str; default = null; description = "The domain of the machine."; };
    firewall = portOptions // {
      enable = mkOption { type = types.bool; default = true; description = "Whether to enable the firewall."; };
      interfaces = mkOption {
        type = types.attrsOf (types.submodule { options = portOptions; });
        default = { };
        description = "Ports open on one interface only.";
      };
    };
  };

  config.networking.firewall.interfaces.default = lib.mapAttrs (name: _: cfg.${name}) portOptions;
}
