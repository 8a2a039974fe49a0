# want: PR512 role authelia at PR512-authelia-without-ca-file.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.caFile = null;
}
