# systemd.services and systemd.stateMigrations, with the options of a unit
# that hosts set most. As in NixOS, a unit exists as soon as any module
# defines anything under its name: a condition alone makes a unit.
{ lib, ... }:
let
  inherit (lib) mkOption types;

  # A value of a [Unit] or [Service] entry, as NixOS's unitOption.
  unitOption = types.oneOf [ types.bool types.int types.str types.path (types.listOf types.str) ];
  names = description: mkOption { type = types.listOf types.str; default = [ ]; inherit description; };

  service = { name, ... }: {
    options = {
      enable = mkOption {
        type = types.bool;
        default = true;
        description = "Whether the unit ${name} is part of the system.";
      };
      description = mkOption { type = types.str; default = ""; description = "The description of the unit."; };
      script = mkOption { type = types.lines; default = ""; description = "The shell commands the unit runs."; };
      preStart = mkOption { type = types.lines; default = ""; description = "Shell commands run before the script."; };
      path = mkOption { type = types.listOf (types.either types.package types.str); default = [ ]; description = "Packages on the unit's PATH."; };
      environment = mkOption { type = types.attrsOf (types.nullOr (types.oneOf [ types.str types.path types.package ])); default = { }; description = "The unit's environment."; };
      serviceConfig = mkOption { type = types.attrsOf unitOption; default = { }; description = "[Service] entries."; };
      unitConfig = mkOption { type = types.attrsOf unitOption; default = { }; description = "[Unit] entries, conditions among them."; };
      startAt = mkOption { type = types.either types.str (types.listOf types.str); default = [ ]; description = "When a timer starts the unit."; };
      restartIfChanged = mkOption { type = types.bool; default = true; description = "Whether a switch restarts the unit when it changed."; };
      wantedBy = names "Units that want this one.";
      requiredBy = names "Units that require this one.";
      wants = names "Units this one wants.";
      requires = names "Units this one requires.";
      after = names "Units this one starts after.";
      before = names "Units this one starts before.";
      partOf = names "Units this one is part of.";
    };
  };
in
{
  options.systemd = {
    services = mkOption {
      type = types.attrsOf (types.submodule service);
      default = { };
      description = "The units of the node, by name.";
    };
    stateMigrations = mkOption {
      type = types.attrsOf (types.submodule {
        options.stopUnits = names "Units the migration stops.";
        options.script = mkOption { type = types.lines; default = ""; description = "The migration."; };
      });
      default = { };
      description = "Migrations of a service's state, by service.";
    };
  };
}
