# The sidekiq role's units read from config.systemd.services, on k8s-pod.nix.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR106 option fediversity.podRoles.roles.sidekiq.units at mastodon-role-units-from-systemd.nix:8:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ config, lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce
        (lib.filter (lib.hasPrefix "mastodon-sidekiq-") (lib.attrNames config.systemd.services));
    })
  ];
}
