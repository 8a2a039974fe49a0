# shardOf count name: the slice, 1 to count, of the node named name, as
# podroles --shard I/N slices nodes (nixeval.ShardOf): the first four bytes
# of the SHA-256 of the name, as a big-endian number, modulo count, plus
# one. A node's slice depends on its name alone. Builtins only.
count: name:
let
  hex = builtins.substring 0 8 (builtins.hashString "sha256" name);
  digits = { "0" = 0; "1" = 1; "2" = 2; "3" = 3; "4" = 4; "5" = 5; "6" = 6; "7" = 7; "8" = 8; "9" = 9; a = 10; b = 11; c = 12; d = 13; e = 14; f = 15; };
  value = builtins.foldl' (n: i: n * 16 + digits.${builtins.substring i 1 hex}) 0 (builtins.genList (i: i) 8);
in
value - (value / count) * count + 1
