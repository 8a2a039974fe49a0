# Lists that read other options of the node, even ones that k8s-pod.nix
# sets, never config.systemd.services: the probe passes them.
# args: --k8s-pod-module ../k8s-pod.nix
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ config, lib, ... }: {
      systemd.services.mastodon-search-index = lib.mkIf (config.networking.domain != null) { script = "tootctl search deploy"; };
      fediversity.podRoles.mainUnits = lib.optional (config.networking.domain != null) "mastodon-search-index";
      fediversity.podRoles.sharedUnits = lib.optionals (!config.fediversity.k8sPod.enable) [ "sshd" ];
    })
  ];
}
