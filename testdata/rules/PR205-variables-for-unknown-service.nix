# want: PR205 service authlia
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.authlia.environment.AUTHELIA_LOG_LEVEL = "debug";
}
