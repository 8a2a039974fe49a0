# lib.mkCheck: a derivation that fails when `podroles-check check` finds an
# error in any of nodes (an attribute set of NixOS systems, such as
# self.nixosConfigurations, or of plain configs).
{ runCommand, podrolesCheck }:
{ nodes, k8sPodModule ? null, strict ? false, name ? "podroles-check", expectRefused ? false }:
runCommand name { } (import ./check-script.nix {
  inherit podrolesCheck strict expectRefused;
  facts = import ./facts-file.nix { inherit nodes k8sPodModule; };
})
