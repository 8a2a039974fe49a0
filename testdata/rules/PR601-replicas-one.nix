# One replica is the least a request gives.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.replicas = 1;
  fediversity.podRoles.roles.lldap.replicas = 1;
}
