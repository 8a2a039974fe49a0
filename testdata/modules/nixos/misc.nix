# assertions and warnings, as nixos/modules/misc/assertions.nix declares
# them. Only a build of the toplevel checks them; podroles never does.
{ lib, ... }:
let
  inherit (lib) mkOption types;
in
{
  options = {
    assertions = mkOption {
      type = types.listOf types.unspecified;
      internal = true;
      default = [ ];
      example = [ { assertion = false; message = "you can't enable this for that reason"; } ];
      description = "Conditions that must hold; the build of the toplevel refuses a node whose condition is false.";
    };
    warnings = mkOption {
      type = types.listOf types.str;
      internal = true;
      default = [ ];
      description = "Messages printed when the node is built.";
    };
  };
}
