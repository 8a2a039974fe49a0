# Off k8s-pod.nix and with no request (every replicas is null), FR-008 does
# not apply: a wrong name in a list gives nothing, and neither do the k8s
# rules (a role with units and no request, a unit in no list).
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  fediversity.podRoles.roles = {
    worker = { replicas = null; units = [ "app-workr" ]; };
    lldap.replicas = null;
    authelia.replicas = null;
  };
}
