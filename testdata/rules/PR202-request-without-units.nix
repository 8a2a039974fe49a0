# A request for sidekiq, but the node module gives it no units (US2-3).
# want: PR202 role sidekiq at PR202-request-without-units.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.sidekiq.replicas = 2;
}
