# The companion rule looks at roles that run lldap: a role of the node's
# image named lldap runs no lldap, and needs no companion.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.lldap = { };
  fediversity.podRoles.roles.lldap = lib.replace { replicas = 1; units = [ "lldap" ]; };
}
