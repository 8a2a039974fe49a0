# Dots in a name, even leading ones, still make the name of a file.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia.secrets = {
    ".env" = { path = "secret/data/authelia/env"; field = "env"; };
    "...jwt" = { path = "secret/data/authelia/jwt"; field = "value"; };
    "session.key" = { path = "secret/data/authelia/session"; field = "value"; };
  };
}
