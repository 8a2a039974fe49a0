# The units of NixOS and of the platform that k8s-pod.nix lists (FR-014).
{
  fediversity.k8sPod.platformUnits = [ "nscd" "systemd-tmpfiles-resetup" ];
}
