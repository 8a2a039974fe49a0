# want: PR401 role worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 8080; } ];
}
