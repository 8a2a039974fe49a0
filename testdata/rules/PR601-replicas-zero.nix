# want: PR601 role worker at PR601-replicas-zero.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.replicas = 0;
}
