# mastodon's VM variant, made with extendModules as nixos-rebuild build-vm
# makes it, and checked off k8s-pod.nix: the variant runs other sidekiq
# processes and one streaming process, and the names in the lists follow,
# because the node module derives them from the same options (FR-004).
let
  mastodon = import ./mastodon.nix;
in
mastodon.extendModules {
  modules = [
    ({ lib, ... }: {
      services.mastodon.sidekiqProcesses = lib.mkForce {
        default = { jobClasses = [ "default" "push" ]; };
        mailers = { jobClasses = [ "mailers" ]; threads = 2; };
      };
      services.mastodon.streamingProcesses = lib.mkForce 1;
    })
  ];
}
