# want: PR511 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.host = "auth.localhost";
}
