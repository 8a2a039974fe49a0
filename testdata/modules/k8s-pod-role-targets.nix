# A k8s-pod.nix that also binds the units of each role to a target of the
# role: on a name in a role's units it sets more than the condition it puts
# on every listed name, but nothing that runs, so its definitions alone do
# not tell whether such a name is a unit the module defines or only the
# condition (PR107).
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

  systemd.services = lib.mkMerge ([
    (lib.genAttrs listed (name: {
      unitConfig.ConditionPathExists = "/run/k8s-pod/units/${name}";
    }))
  ] ++ lib.mapAttrsToList (role: r: lib.genAttrs r.units (_: { partOf = [ "k8s-pod-role-${role}.target" ]; })) roles.roles);
}
