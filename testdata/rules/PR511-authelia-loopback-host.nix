# want: PR511 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.host = "127.0.0.1";
}
