# A certificate order in every pod (FR-006).
# want: PR104 unit acme-example.org
let lib = import ../lib.nix; in
lib.node {
  systemd.services."acme-example.org" = { };
  fediversity.podRoles.sharedUnits = [ "node-exporter" "acme-example.org" ];
}
