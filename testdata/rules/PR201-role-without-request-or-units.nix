# A role with neither a request nor units names nothing to refuse.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.sidekiq = { replicas = null; units = [ ]; };
}
