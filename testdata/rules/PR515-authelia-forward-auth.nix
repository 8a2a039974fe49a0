# want: PR515 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.forwardAuth.enable = true;
}
