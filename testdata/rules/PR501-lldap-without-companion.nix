# want: PR501 role lldap at PR501-lldap-without-companion.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.companion = false;
}
