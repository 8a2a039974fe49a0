# The host imports k8s-pod-link.nix, a symbolic link to k8s-pod.nix, and
# podroles is given k8s-pod.nix: the same file, so the module is applied
# once, under the host's name for it, and its conditions are told apart:
# the misspelled name is PR101, as with the file itself.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-k8s-pod-link.nix:13:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod-link.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
