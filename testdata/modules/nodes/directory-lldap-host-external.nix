# The host's own name for the directory, forced over the node module's
# Service name: readers in other pods reach no role there.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR508 role lldap at directory-lldap-host-external.nix:8:22
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    ({ lib, ... }: { fediversity.lldap.host = lib.mkForce "ldap.example.org"; })
  ];
}
