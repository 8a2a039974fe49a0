# want: PR501 role lldap
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.companion = false;
}
