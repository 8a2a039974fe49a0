# A secret redefined, with mkForce, with its path only.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR610 secret jwt at directory-secret-without-field.nix:7:22
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    ({ lib, ... }: { fediversity.podRoles.roles.lldap.secrets.jwt = lib.mkForce { path = "secret/data/lldap/jwt"; }; })
  ];
}
