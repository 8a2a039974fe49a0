# sharedUnits names the unit by the name of its package, not of its unit.
# want: PR101 unit prometheus-node-exporter at PR101-unknown-shared-unit.nix:7:3
# want: PR103 unit node-exporter at ../lib.nix:34:7
# The real unit node-exporter is then in no list, hence PR103 too.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.sharedUnits = [ "prometheus-node-exporter" ];
}
