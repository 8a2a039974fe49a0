# A role of the node's image with an empty set of secrets has none.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.secrets = { };
}
