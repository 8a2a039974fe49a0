# The sidekiq role's metrics port, forced by a module of the host over the
# one that follows from mastodon's options, is one the firewall does not
# open.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR402 role sidekiq at mastodon-metrics-port-forced.nix:9:22
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: { fediversity.podRoles.roles.sidekiq.metrics.port = lib.mkForce 9400; })
  ];
}
