# The host imports a k8s-pod module that binds the units of each role to a
# target, and misspells a unit of a role; no --k8s-pod-module. The
# misspelled name is a unit only through that module, whose definition of
# it sets more than its condition (partOf) and nothing that runs: podroles
# cannot tell it from a unit the module defines, and warns at the list.
# want: PR107 unit mastodon-sidekik-all at mastodon-sidekik-all-imports-k8s-pod-role-targets.nix:13:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ../k8s-pod-role-targets.nix
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
