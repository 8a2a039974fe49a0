# No role of the node's image (worker is gone): the unit lldap, enabled and
# in no list, starts in the main pod, while role lldap runs lldap from its
# image (US1-6 holds whether or not a role of the node's image exists).
# want: PR105 unit lldap at PR105-no-node-image-role.nix:7:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.lldap = { };
  fediversity.podRoles.roles.worker = lib.replace { };
}
