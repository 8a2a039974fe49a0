# mainUnits reads config.systemd.services (FR-007). Off k8s-pod.nix the node
# evaluates, and the probe finds it.
# want: PR106 option fediversity.podRoles.mainUnits at ../hosts/mastodon/main-units-from-systemd.nix:7:3
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ../hosts/mastodon/main-units-from-systemd.nix ]; }
