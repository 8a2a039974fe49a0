# systemd's own set-up units run in every pod: not marked as run-once.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.systemd-tmpfiles-setup = { };
  fediversity.podRoles.sharedUnits = [ "node-exporter" "systemd-tmpfiles-setup" ];
}
