# nixosModules.default: building a node that imports this module runs
# `podroles-check check` on the node, through system.checks, so that
# `nixos-rebuild build` fails with the findings that name its units.
{ podrolesCheckFor }:
{ config, lib, pkgs, ... }:
let
  cfg = config.podroles.check;
in
{
  options.podroles.check = {
    enable = lib.mkOption {
      type = lib.types.bool;
      default = true;
      description = "Whether building this node runs podroles check on it.";
    };
    strict = lib.mkOption {
      type = lib.types.bool;
      default = false;
      description = "Whether warnings of podroles check fail the build too.";
    };
  };

  config = lib.mkIf cfg.enable {
    system.checks = [
      (import ./mk-check.nix { inherit (pkgs) runCommand; podrolesCheck = podrolesCheckFor pkgs; } {
        name = "podroles-check-${config.networking.hostName}";
        nodes.${config.networking.hostName} = { inherit config; };
        inherit (cfg) strict;
      })
    ];
  };
}
