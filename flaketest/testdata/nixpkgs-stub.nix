# The smallest stand-in for nixpkgs that flake.nix's glue calls, for tests
# on a machine with no nixpkgs: each builder returns what it was given, so a
# test can read which command a check runs and on which file. The podroles
# "package" is the binary that the test built, in PODROLES_TEST_BIN_DIR.
let
  genAttrs = names: f: builtins.listToAttrs (map (name: { inherit name; value = f name; }) names);
  pkgsFor = system: rec {
    inherit system;
    lib = { inherit genAttrs; };
    runCommand = name: env: buildCommand: env // { type = "derivation"; inherit name buildCommand; builder = "runCommand"; };
    buildGoModule = args: args // {
      type = "derivation";
      builder = "buildGoModule";
      outPath = builtins.getEnv "PODROLES_TEST_BIN_DIR";
      overrideAttrs = f: args // f args // { builder = "buildGoModule"; };
    };
    callPackage = path: args: import path ({ inherit buildGoModule; } // args);
    mkShell = args: args // { type = "derivation"; builder = "mkShell"; };
    dockerTools.buildLayeredImage = args: args // { type = "derivation"; builder = "buildLayeredImage"; };
  } // genAttrs [ "cacert" "go" "gopls" "nix" "gnumake" "openldap" "postgresql" "nginx" "haproxy" "openbao" "authelia" "etcd" "kubernetes" "kwok" ] (name: { inherit name; });
in
{
  lib = { inherit genAttrs; };
  legacyPackages = genAttrs [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ] pkgsFor;
}
