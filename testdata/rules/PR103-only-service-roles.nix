# No requested role runs the image of the node (worker is gone, only the
# roles of lldap and authelia remain): app-worker in no list is fine.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.worker = lib.replace { };
}
