# A stand-in for the platform's k8s-pod.nix, as the tests need it: it puts
# the node on the k8s method and lists the units of NixOS and the platform.
{
  fediversity.k8sPod = {
    enable = true;
    platformUnits = [ "nscd" "systemd-tmpfiles-resetup" ];
  };
}
