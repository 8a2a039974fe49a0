# The host imports k8s-pod-enable.nix (a k8s-pod.nix that only puts the
# node on the k8s method) and the platform's pod-roles module, whose
# conditions act under fediversity.k8sPod.enable, and misspells a unit; no
# --k8s-pod-module. Every definition of the misspelled name is the
# condition alone, and nothing that runs: it is no unit of the node.
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-enable-and-conditions.nix:14:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod-enable.nix
    ../pod-conditions.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
