# The host imports the k8s-pod module of several files itself, and podroles
# is given the same folder: the files only the module imports are the
# module's too.
# args: --k8s-pod-module ../k8s-pod-split
# want: PR101 unit mastodon-sidekik-all at mastodon-imports-split-k8s-pod.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod-split
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
