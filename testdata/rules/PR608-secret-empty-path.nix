# want: PR608 secret tls.pem
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".path = "";
}
