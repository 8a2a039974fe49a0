# Paths in the service's own image, and a setting that only mentions the
# word store.
let lib = import ../lib.nix; in
lib.node {
  fediversity.podRoles.services.authelia.environment = {
    AUTHELIA_THEME_PATH = "/usr/share/authelia/dark.css";
    AUTHELIA_SESSION_STORE = "redis";
  };
}
