# Media removal is off, so mastodon's module defines its unit under a mkIf
# whose condition is false: no unit. A module of the host still lists it;
# on k8s-pod.nix only the condition defines it.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit mastodon-media-auto-remove at mastodon-media-removal-off.nix:11:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    {
      services.mastodon.mediaAutoRemove.enable = false;
      fediversity.podRoles.mainUnits = [ "mastodon-media-auto-remove" ];
    }
  ];
}
