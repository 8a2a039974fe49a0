# A second directory made from the first with extendModules, as a host of
# another region: its Service name follows its hostName, and so does
# fediversity.lldap.host, which the node module derives from it.
# args: --k8s-pod-module ../k8s-pod.nix
let
  directory = import ./directory.nix;
in
directory.extendModules {
  modules = [ ({ lib, ... }: { networking.hostName = lib.mkForce "directory-eu"; }) ];
}
