# want: PR205 service authlia at PR205-variables-for-unknown-service.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.authlia.environment.AUTHELIA_LOG_LEVEL = "debug";
}
