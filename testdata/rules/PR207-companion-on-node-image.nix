# A role of the node's image asks for a companion: it has no service, so no
# program for its service (US2-9), and no secrets either (PR206).
# want: PR206 role worker
# want: PR207 role worker
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.companion = true;
}
