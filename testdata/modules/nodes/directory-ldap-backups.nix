# mainUnits names ldap-backups, which no module of the host defines. On
# k8s-pod.nix the condition on that name makes a unit of it, so the node
# has one; FR-008 judges the names against the node before k8s-pod.nix
# adds anything, and names it.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR101 unit ldap-backups at ../hosts/directory/backups.nix:4:3
(import ../nixos { }).nixosSystem { modules = [ ../hosts/directory ../hosts/directory/backups.nix ]; }
