# FR-014: a unit of sharedUnits must not also be in a role.
# want: PR102 unit app-worker at ../lib.nix:47:9
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.sharedUnits = [ "node-exporter" "app-worker" ];
}
