# A new unit that nobody gave a class (FR-014, US1-17).
# want: PR103 unit mastodon-media-auto-remove at PR103-new-unit-unlisted.nix:5:3
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-media-auto-remove = { };
}
