# A role named main with no request makes no Deployment, so nothing of it
# has the main pod's labels; a requested role whose name only starts with
# main has labels of its own: no finding.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.app-main = { };
  fediversity.podRoles.roles = {
    main = { };
    main-db = { replicas = 1; units = [ "app-main" ]; ports = [ { port = 80; } ]; };
  };
}
