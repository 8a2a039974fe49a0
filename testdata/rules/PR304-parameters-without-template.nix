# A certificate from the PKI engine with its parameters but no template
# (US2-12).
# want: PR304 secret tls.pem at PR304-parameters-without-template.nix:6:61
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem" = { template = null; field = "certificate"; };
}
