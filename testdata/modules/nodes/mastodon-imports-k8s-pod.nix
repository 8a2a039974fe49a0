# The host imports k8s-pod.nix itself, and podroles is given the same file
# with --k8s-pod-module: one module, and the units it alone makes are still
# no units of the node.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit mastodon-sidekik-all at mastodon-imports-k8s-pod.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
