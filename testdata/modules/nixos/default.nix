# A stand-in for nixpkgs' NixOS, as small as podroles' tests need, over the
# real module system of nixpkgs' lib: this machine has no nixpkgs, only its
# lib. nixosSystem does what nixpkgs' lib.nixosSystem does for podroles:
# lib.evalModules over the declarations of the node surface
# (docs/node-surface.md) and the given modules, returning the
# evaluation ({ config, options, extendModules, ... }) as nixpkgs does.
#
#   (import ./nixos { }).nixosSystem { modules = [ ./hosts/mastodon ]; }
#   (import ./nixos { lib = import "${nixpkgs-lib}/lib"; }).nixosSystem { ... }
{ lib ? import ./lib.nix }:
{
  inherit lib;

  nixosSystem = { modules, specialArgs ? { } }:
    lib.evalModules {
      class = "nixos";
      specialArgs = { modulesPath = toString ./.; } // specialArgs;
      modules = import ./module-list.nix ++ modules;
    };
}
