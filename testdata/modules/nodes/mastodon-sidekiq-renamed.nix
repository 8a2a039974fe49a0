# A host on another method whose node module lists a misspelled sidekiq
# unit, overriding the names that follow from mastodon's options with
# mkForce: FR-008 applies on every method (SC-002).
# want: PR101 unit mastodon-sidekik-all at mastodon-sidekiq-renamed.nix:9:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: {
      fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ];
    })
  ];
}
