# want: PR512 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.caFile = null;
}
