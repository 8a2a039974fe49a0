# want: PR514 role authelia at PR514-authelia-without-smtp.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.smtp = null;
}
