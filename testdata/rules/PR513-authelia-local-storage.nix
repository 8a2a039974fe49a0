# want: PR513 role authelia at PR513-authelia-local-storage.nix:4:48
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.storage = lib.replace { local.path = "/var/lib/authelia/db.sqlite3"; };
}
