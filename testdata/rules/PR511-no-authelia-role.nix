# authelia on localhost is fine when no role runs authelia.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.roles.authelia = lib.replace { };
  fediversity.authelia.host = "localhost";
}
