# want: PR515 role authelia at PR515-authelia-forward-auth.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.forwardAuth.enable = true;
}
