# A host's vendored copy of the platform's k8s-pod.nix, older than the
# platform's (this comment is all that differs): it puts the node on the k8s
# method and a condition on every unit that the lists name. A condition on
# a name makes a unit of that name.
{ config, lib, ... }:
let
  roles = config.fediversity.podRoles;
  listed = lib.unique (lib.concatLists (lib.mapAttrsToList (_: role: role.units) roles.roles) ++ roles.mainUnits ++ roles.sharedUnits);
in
{
  fediversity.k8sPod = {
    enable = true;
    platformUnits = [ "nscd" "systemd-tmpfiles-resetup" ];
  };

  # The method writes, in each pod, a file per unit that the pod may run.
  systemd.services = lib.genAttrs listed (name: {
    unitConfig.ConditionPathExists = "/run/k8s-pod/units/${name}";
  });

  # FR-008 and FR-014 as the platform's module asserts them; only a build of
  # the toplevel reads them. The names are judged after the conditions above
  # made their units, which is why a wrong name passes here.
  assertions = map (name: {
    assertion = config.systemd.services ? ${name};
    message = "fediversity.podRoles: unit ${name} does not exist";
  }) listed;
}
