# want: PR514 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.smtp = null;
}
