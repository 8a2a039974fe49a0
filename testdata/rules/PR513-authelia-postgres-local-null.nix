# storage.local given as null next to postgres.
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.storage.local = null;
}
