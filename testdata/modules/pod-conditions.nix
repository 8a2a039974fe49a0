# The platform's pod-roles module, imported by every host: on the k8s method
# only, a condition on every unit that the lists name. A condition on a name
# makes a unit of it, but only on k8s-pod.nix: without the method the node
# has no such unit, and FR-008 must judge the names against that node.
{ config, lib, ... }:
let
  roles = config.fediversity.podRoles;
  listed = lib.unique (lib.concatMap (role: role.units) (lib.attrValues roles.roles) ++ roles.mainUnits ++ roles.sharedUnits);
in
{
  config = lib.mkIf config.fediversity.k8sPod.enable {
    systemd.services = lib.genAttrs listed (name: {
      unitConfig.ConditionPathExists = "/run/k8s-pod/units/${name}";
    });
  };
}
