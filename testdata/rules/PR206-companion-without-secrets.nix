# The role of lldap keeps its companion but lost its secrets (US2-9).
# want: PR206 role lldap
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets = lib.replace { };
}
