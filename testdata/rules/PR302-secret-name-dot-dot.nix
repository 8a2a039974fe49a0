# want: PR302 secret ..
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets.".." = {
    path = "secret/data/authelia/jwt";
    field = "value";
  };
}
