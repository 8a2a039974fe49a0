# mastodon-sidekik-all.nix on a k8s-pod module of several files: the
# condition that makes a unit of the misspelled name comes from a file that
# the module imports, not from the module's own default.nix.
# args: --k8s-pod-module ../k8s-pod-split
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all-on-split-k8s-pod.nix:11:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
