# nixosModules.default: building a node that imports this module runs
# `podroles-check check` on the node, through system.checks, so that
# `nixos-rebuild build` fails with the findings that name its units.
#
# The check reads the node as `podroles check` and lib.mkCheck read a
# NixOS system: its config, its options (whose definitions tell the
# conditions of a k8s-pod.nix that the host imports itself from units) and
# extendModules (the FR-007 probe, and the probe of those conditions), all
# of this very evaluation, so that the three give the same findings.
{ podrolesCheckFor }:
{ config, options, extendModules, lib, pkgs, ... }:
let
  cfg = config.podroles.check;

  # The node as lib.nixosSystem returns it. The graph of imports (which
  # module imports which, for a k8s-pod.nix of several files) and the type
  # (its modules, read again for the locations) are the module system's
  # own: an extension that adds no module has them (a lib without a graph,
  # none), and its config is never read.
  extended = extendModules { };
  system = {
    _type = "configuration";
    inherit config options extendModules;
    inherit (extended) type;
    _module = config._module;
    graph = extended.graph or [ ];
  };
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
        nodes.${config.networking.hostName} = system;
        inherit (cfg) strict;
      })
    ];
  };
}
