# lib.mkCheck: a derivation that fails when `podroles-check check` finds an
# error in any of nodes (an attribute set of NixOS systems, such as
# self.nixosConfigurations, or of plain configs).
#
# shard = { index = I; count = N; }: only the nodes of the I-th of N slices
# (by name, as podroles --shard I/N slices them): the facts of the other
# nodes are never evaluated. A slice that holds no node passes.
{ runCommand, podrolesCheck }:
{ nodes, k8sPodModule ? null, strict ? false, name ? "podroles-check", expectRefused ? false, shard ? null }:
let
  shardOf = import ./shard.nix;
  names = builtins.attrNames nodes;
  kept = if shard == null then names else builtins.filter (n: shardOf shard.count n == shard.index) names;
in
if kept == [ ] && shard != null then
  runCommand name { } ''
    mkdir -p "$out"
    echo "shard ${toString shard.index}/${toString shard.count} holds none of the ${toString (builtins.length names)} nodes" | tee "$out/empty-shard"
  ''
else
  runCommand name { } (import ./check-script.nix {
    inherit podrolesCheck strict expectRefused;
    facts = import ./facts-file.nix {
      nodes = builtins.listToAttrs (map (n: { name = n; value = nodes.${n}; }) kept);
      inherit k8sPodModule;
    };
  })
