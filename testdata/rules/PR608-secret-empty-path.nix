# want: PR608 secret tls.pem at PR608-secret-empty-path.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".path = "";
}
