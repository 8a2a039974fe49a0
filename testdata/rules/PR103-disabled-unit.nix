# A disabled unit in no list needs no class.
let lib = import ../lib.nix; in
lib.node {
  systemd.services.mastodon-media-auto-remove.enable = false;
}
