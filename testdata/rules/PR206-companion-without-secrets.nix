# The role of lldap keeps its companion but lost its secrets (US2-9).
# want: PR206 role lldap at ../lib.nix:54:9
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.lldap.secrets = lib.replace { };
}
