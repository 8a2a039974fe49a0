# A companion program at an absolute path in the service's image passes.
# (As a path literal it would be copied to the store: PR612.)
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.companion = "/usr/libexec/lldap-companion";
}
