# The host enables the modular service forgejo-runner, which role runner
# runs from the service's image; NixOS makes the node's own unit of it, and
# no module of the host touches that unit. PR105 points at the host's line
# that made the unit, system.services.forgejo-runner, not at the module of
# NixOS that turns every modular service into a unit.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR105 unit forgejo-runner at forge-runner-unit-of-nixos.nix:15:7
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/common
    ({ lib, ... }: {
      networking.hostName = "forge";
      systemd.services.forgejo = { wantedBy = [ "multi-user.target" ]; };
      fediversity.podRoles.mainUnits = [ "forgejo" ];
      system.services.forgejo-runner.process.argv = [ "/bin/forgejo-runner" "daemon" ];
      fediversity.podRoles.roles.runner = { replicas = 2; service = "forgejo-runner"; };
    })
  ];
}
