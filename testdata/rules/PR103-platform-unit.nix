# A unit of NixOS in platformUnits only needs no other list.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.systemd-journald = { };
  fediversity.k8sPod.platformUnits = [ "nscd" "systemd-journald" ];
}
