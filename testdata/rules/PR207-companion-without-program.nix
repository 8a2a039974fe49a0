# The role of lldap asks for a companion, but the node module gives no
# program for it (US2-9).
# want: PR207 role lldap at PR207-companion-without-program.nix:6:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.lldap.companion = null;
}
