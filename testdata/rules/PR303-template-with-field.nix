# want: PR303 secret tls.pem at PR303-template-with-field.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".field = "certificate";
}
