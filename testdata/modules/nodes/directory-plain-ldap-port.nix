# A module of the host adds lldap's plain LDAP port to the role's ports
# (the lists of all modules are merged): it would be on the Service.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR507 port 3890/TCP at directory-plain-ldap-port.nix:8:52
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/directory
    { fediversity.podRoles.roles.lldap.ports = [ { port = 3890; } ]; }
  ];
}
