# A certificate order in every pod (FR-006).
# want: PR104 unit acme-example.org at PR104-acme-shared.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services."acme-example.org" = { };
  fediversity.podRoles.sharedUnits = [ "node-exporter" "acme-example.org" ];
}
