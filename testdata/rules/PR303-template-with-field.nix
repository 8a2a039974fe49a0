# want: PR303 secret tls.pem
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".field = "certificate";
}
