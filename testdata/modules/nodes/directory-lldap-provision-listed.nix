# lldap-provision put back in the main pod, while the companion of role
# lldap does its work.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR506 unit lldap-provision at directory-lldap-provision-listed.nix:8:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    { fediversity.podRoles.mainUnits = [ "lldap-provision" ]; }
  ];
}
