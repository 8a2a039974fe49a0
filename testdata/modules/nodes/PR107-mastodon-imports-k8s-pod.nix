# The host imports k8s-pod.nix itself and is checked without
# --k8s-pod-module: podroles cannot tell the module's conditions from the
# node's units, but every name in the lists is a unit that the host's own
# modules define too, so nothing is hidden and nothing is said.
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ../k8s-pod.nix ]; }
