# directory on k8s-pod.nix: every name in the lists is a unit the host
# defines, on which k8s-pod.nix puts its condition too.
# args: --k8s-pod-module ../k8s-pod.nix
(import ../nixos { }).nixosSystem { modules = [ ../hosts/directory ]; }
