# want: PR601 role worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.replicas = 0;
}
