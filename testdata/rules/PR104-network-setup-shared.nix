# NixOS's network-setup sets up each machine, so each pod: not run-once.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.network-setup = { };
  fediversity.podRoles.sharedUnits = [ "node-exporter" "network-setup" ];
}
