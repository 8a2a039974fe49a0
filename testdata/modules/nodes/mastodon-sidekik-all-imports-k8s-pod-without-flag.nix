# The host imports k8s-pod.nix itself, and podroles is not told which file
# that is: the misspelled name is a unit only through the module's
# condition, which podroles cannot tell from a unit of the node. It warns,
# at the list, and names the module to give with --k8s-pod-module.
# want: PR107 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-k8s-pod-without-flag.nix:12:7
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
