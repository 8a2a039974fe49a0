# want: PR209 service authelia at PR209-store-path-in-variable.nix:5:3
# A path of the node's store, which the image of authelia does not hold.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.authelia.environment.AUTHELIA_THEME_PATH = "/nix/store/0123456789abcdfghijklmnpqrsvwxyz-theme/dark.css";
}
