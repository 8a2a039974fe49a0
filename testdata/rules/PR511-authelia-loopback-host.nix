# want: PR511 role authelia at PR511-authelia-loopback-host.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.host = "127.0.0.1";
}
