# want: PR511 role authelia at PR511-authelia-host-localhost.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.host = "auth.localhost";
}
