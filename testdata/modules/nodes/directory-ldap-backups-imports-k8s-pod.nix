# directory-ldap-backups.nix on a host that imports k8s-pod.nix itself,
# checked without --k8s-pod-module: no role runs the node's image, so no
# unit is in no list (PR103), and the name no module defines is still
# named, as no unit of the node: the condition alone defines it.
# want: PR101 unit ldap-backups at ../hosts/directory/backups.nix:4:3
(import ../nixos { }).nixosSystem { modules = [ ../hosts/directory ../hosts/directory/backups.nix ../k8s-pod.nix ]; }
