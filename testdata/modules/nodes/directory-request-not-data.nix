# Values that are no data in the settings of the roles, which the module
# system's types let through: a function among a secret's parameters and a
# path literal as the companion program (types.path takes it). Neither is
# called nor copied to be found.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR612 option fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters.ttl at directory-request-not-data.nix:12:7
# want: PR612 option fediversity.podRoles.services.lldap.companion at directory-request-not-data.nix:13:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    ({ lib, ... }: {
      fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters.ttl = lib.mkForce (days: "${toString (days * 24)}h");
      fediversity.podRoles.services.lldap.companion = lib.mkForce ./no-such-companion;
    })
  ];
}
