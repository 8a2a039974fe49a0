# want: PR302 secret .. at PR302-secret-name-dot-dot.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets.".." = {
    path = "secret/data/authelia/jwt";
    field = "value";
  };
}
