# A role of the node's image asks for a companion: it has no service, so no
# program for its service (US2-9), and no secrets either (PR206).
# want: PR206 role worker at PR207-companion-on-node-image.nix:7:3
# want: PR207 role worker at PR207-companion-on-node-image.nix:7:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker.companion = true;
}
