# system.services: modular services. As in NixOS, each makes a unit of its
# own name that runs its process; a role with `service` runs the service's
# image instead, and that unit must not start in a pod of the node's image
# (US1-6).
{ config, lib, ... }:
let
  inherit (lib) mkOption types;
in
{
  options.system.services = mkOption {
    type = types.attrsOf (types.submodule ({ name, ... }: {
      options.process.argv = mkOption {
        type = types.listOf (types.coercedTo types.path toString types.str);
        description = "The command line of the service ${name}.";
      };
    }));
    default = { };
    description = "Modular services, by name.";
  };

  config.systemd.services = lib.mapAttrs (name: service: {
    description = "Modular service ${name}";
    wantedBy = [ "multi-user.target" ];
    serviceConfig.ExecStart = lib.escapeShellArgs service.process.argv;
  }) config.system.services;
}
