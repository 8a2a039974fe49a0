# US1-5 and FR-013: a node off k8s-pod.nix with no request is not touched
# by the roles at all, so nothing is checked, not even its input: a wrong
# unit name, a bad port, an unknown encoding and a relative metrics path
# give no finding.
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  fediversity.podRoles.roles = lib.replace {
    worker = {
      units = [ "app-workr" ];
      ports = [ { port = 70000; } ];
      metrics = { port = 9100; path = "metrics"; };
    };
    lldap = {
      service = "lldap";
      secrets.jwt = { path = "secret/data/lldap/jwt"; encoding = "hex"; };
    };
  };
}
