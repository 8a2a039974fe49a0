# want: PR513 role authelia
let lib = import ../lib.nix; in
lib.node {
  fediversity.authelia.storage = lib.replace { local.path = "/var/lib/authelia/db.sqlite3"; };
}
