# want: PR602 port 0/TCP
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.metrics = { port = 0; };
}
