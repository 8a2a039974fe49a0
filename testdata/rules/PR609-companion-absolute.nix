# A companion program at an absolute path in the service's image passes,
# here as a path literal (it is projected as its path, not copied).
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.companion = /usr/libexec/lldap-companion;
}
