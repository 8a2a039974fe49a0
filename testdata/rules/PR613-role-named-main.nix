# The plan labels the main pod with role main: a role named main makes
# the Deployment node-main, whose pods have the labels of the main pod
# that the Deployment node selects, and its Service node-main would send
# connections to the main pod.
# want: PR613 role main at PR613-role-named-main.nix:9:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.app-main = { };
  fediversity.podRoles.roles.main = { replicas = 1; units = [ "app-main" ]; ports = [ { port = 80; } ]; };
}
