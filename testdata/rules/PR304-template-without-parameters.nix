# A template with no parameters (an engine that needs none), and a KV
# secret with parameters = null.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters = null;
  fediversity.podRoles.roles.lldap.secrets.jwt.parameters = null;
}
