# want: PR401 role worker at PR401-port-not-open.nix:4:65
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.ports = [ { port = 443; } { port = 8080; } ];
}
