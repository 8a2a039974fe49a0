# A role of a modular service that the node has, with a - in its name.
let lib = import ../lib.nix; in
lib.node {
  system.services.mastodon-streaming = { };
  fediversity.podRoles.roles.streaming = { replicas = 2; service = "mastodon-streaming"; };
}
