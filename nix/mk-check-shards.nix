# lib.mkCheckShards { pkgs, nodes, shards, name ? "podroles-check", ... }:
# lib.mkCheck split into `shards` checks, each of one slice of the nodes
# (podroles --shard I/N's slices), named NAME-I-of-N: an attribute set to
# merge into checks.<system>. Each check evaluates the facts of its own
# nodes only, so that builders that evaluate checks apart (Hydra, CI
# matrix jobs that each build one check) evaluate and build the slices in
# parallel. The other arguments are mkCheck's.
{ mkCheck }:
{ shards, name ? "podroles-check", ... }@args:
assert builtins.isInt shards && shards >= 1;
builtins.listToAttrs (builtins.genList
  (i:
    let label = "${name}-${toString (i + 1)}-of-${toString shards}"; in
    {
      name = label;
      value = mkCheck (removeAttrs args [ "shards" ] // { name = label; shard = { index = i + 1; count = shards; }; });
    })
  shards)
