# A first role of authelia, before anyone set fediversity.authelia: host,
# caFile and smtp are at the defaults of their declarations. No module of
# the host defines them, so each finding points at the role that runs
# authelia, not at the file of NixOS that declares the option.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR511 role authelia at directory-authelia-options-left-at-defaults.nix:18:9
# want: PR512 role authelia at directory-authelia-options-left-at-defaults.nix:18:9
# want: PR514 role authelia at directory-authelia-options-left-at-defaults.nix:18:9
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/common
    ({ lib, ... }: {
      networking.hostName = "auth";
      system.services.authelia.process.argv = [ "/bin/authelia" ];
      systemd.services.authelia.enable = false;
      fediversity.podRoles.roles.authelia = {
        replicas = 1;
        service = "authelia";
        ports = [ { port = 9091; } ];
      };
      fediversity.authelia.storage.postgres.host = "postgres.auth.svc";
    })
  ];
}
