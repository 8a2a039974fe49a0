# lldap as a role, TLS enabled, but fediversity.lldap.tls.caFile and host
# left at the defaults of their declarations: no module of the host defines
# them, so both findings point at the role that runs lldap, never at the
# file of NixOS that declares the options.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR502 role lldap at directory-lldap-tls-ca-file-left-at-default.nix:17:9
# want: PR504 role lldap at directory-lldap-tls-ca-file-left-at-default.nix:17:9
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/common
    ({ lib, ... }: {
      networking.hostName = "dir";
      system.services.lldap.process.argv = [ "/bin/lldap" "run" ];
      systemd.services.lldap.enable = false;
      fediversity.podRoles.roles.lldap = {
        replicas = 2;
        service = "lldap";
        companion = true;
        ports = [ { port = 6360; } ];
        secrets.jwt = { path = "secret/data/lldap/jwt"; field = "value"; };
      };
      fediversity.podRoles.services.lldap.companion = "/bin/companion";
      fediversity.lldap.tls.enable = true;
      fediversity.lldap.readerBindPasswordFile = "/var/lib/lldap/bind-password";
    })
  ];
}
