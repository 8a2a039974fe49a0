# mastodon's metrics port given with mkDefault by a platform module and
# overridden by the host: the firewall follows the same option, so the
# port that wins is open.
# args: --k8s-pod-module ../k8s-pod.nix
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: { services.mastodon.metricsPort = lib.mkDefault 9394; })
    { services.mastodon.metricsPort = 9395; }
  ];
}
