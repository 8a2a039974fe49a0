# A condition on every unit that the lists name, so that a unit starts only
# in the pods its list permits; a condition on a name makes a unit of it.
{ config, lib, ... }:
let
  roles = config.fediversity.podRoles;
  listed = lib.unique (lib.concatMap (role: role.units) (lib.attrValues roles.roles) ++ roles.mainUnits ++ roles.sharedUnits);
in
{
  systemd.services = lib.genAttrs listed (name: {
    unitConfig.ConditionPathExists = "/run/k8s-pod/units/${name}";
  });
}
