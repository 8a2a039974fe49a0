# lldap-provision disabled on k8s-pod.nix and in no list: the companion of
# role lldap does its work.
let lib = import ../lib.nix; in
lib.node { systemd.services.lldap-provision.enable = false; }
