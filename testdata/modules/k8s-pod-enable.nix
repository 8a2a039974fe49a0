# A k8s-pod.nix that only puts the node on the k8s method: the conditions on
# the listed units are those of the platform's own pod-roles module
# (pod-conditions.nix), which every host imports and which acts only under
# fediversity.k8sPod.enable, as NixOS modules act under their enable.
{
  fediversity.k8sPod = {
    enable = true;
    platformUnits = [ "nscd" "systemd-tmpfiles-resetup" ];
  };
}
