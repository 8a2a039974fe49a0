# The same node checked with --k8s-pod-module: extended with the module,
# it would be an infinite recursion, so podroles checks it without the
# module, and says so in the finding.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR106 option fediversity.podRoles.mainUnits at ../hosts/mastodon/main-units-from-systemd.nix:7:3
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ../hosts/mastodon/main-units-from-systemd.nix ]; }
