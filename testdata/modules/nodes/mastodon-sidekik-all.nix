# The sidekiq role lists mastodon-sidekik-all, a misspelling. On
# k8s-pod.nix the condition makes a unit of the misspelled name; FR-008
# names it (with the unit it means), and FR-014 the real unit, which is in
# no list.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
