# The host imports the k8s-pod module that binds the units of each role to
# a target, and every name in its lists is a unit that the host's own
# modules define too: nothing is hidden, and nothing is said.
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ../k8s-pod-role-targets.nix ]; }
