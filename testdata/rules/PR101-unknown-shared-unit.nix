# sharedUnits names the unit by the name of its package, not of its unit.
# want: PR101 unit prometheus-node-exporter
# want: PR103 unit node-exporter
# The real unit node-exporter is then in no list, hence PR103 too.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.sharedUnits = [ "prometheus-node-exporter" ];
}
