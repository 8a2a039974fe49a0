# k8s-pod.nix as a platform's grows: a folder whose default.nix imports the
# conditions and the platform's units from files of their own. The
# conditions on the listed names come from conditions.nix, a file that only
# this module imports: FR-008 must count them as the module's, not as units
# of the node.
{
  imports = [ ./conditions.nix ./platform-units.nix ];
  fediversity.k8sPod.enable = true;
}
