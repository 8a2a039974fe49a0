# A certificate from the PKI engine with its parameters but no template
# (US2-12).
# want: PR304 secret tls.pem
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem" = { template = null; field = "certificate"; };
}
