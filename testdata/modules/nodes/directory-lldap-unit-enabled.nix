# A module of the host turns the unit lldap back on, with mkForce, while
# role lldap runs lldap from the service's image (US1-6): two lldaps, one of
# them in the main pod.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR105 unit lldap at directory-lldap-unit-enabled.nix:9:22
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    ({ lib, ... }: { systemd.services.lldap.enable = lib.mkForce true; })
  ];
}
