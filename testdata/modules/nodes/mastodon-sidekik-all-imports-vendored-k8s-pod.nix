# The host imports its own, vendored copy of k8s-pod.nix (its text differs
# from the platform's), and podroles is given the platform's: the copy's
# conditions are the node's own definitions to podroles, but every
# definition of the misspelled name sets only the condition, and nothing
# that runs: it is no unit of the node.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-vendored-k8s-pod.nix:14:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod-vendored.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
