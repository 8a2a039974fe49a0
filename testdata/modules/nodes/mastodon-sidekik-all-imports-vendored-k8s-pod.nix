# The host imports its own, vendored copy of k8s-pod.nix (its text differs
# from the platform's), and podroles is given the platform's: the copy's
# conditions are the node's own definitions to podroles, so the misspelled
# name is no PR101; it warns that the name could not be judged.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR107 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-vendored-k8s-pod.nix:13:7
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
