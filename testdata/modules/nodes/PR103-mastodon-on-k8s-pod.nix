# mastodon on k8s-pod.nix: every enabled unit is in a list, in
# platformUnits, or switched off on k8s (sshd).
# args: --k8s-pod-module ../k8s-pod.nix
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ]; }
