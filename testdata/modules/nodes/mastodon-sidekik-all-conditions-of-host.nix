# The conditions are the host's own pod-roles module's, active only on the
# k8s method, and k8s-pod.nix only enables it: without the method, the node
# has no unit mastodon-sidekik-all, so FR-008 names it on k8s-pod.nix too.
# args: --k8s-pod-module ../k8s-pod-enable.nix
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all-conditions-of-host.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../pod-conditions.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
