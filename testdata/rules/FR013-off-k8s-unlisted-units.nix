# FR-013: off k8s-pod.nix the roles do not split the node, so a unit in no
# list (FR-014) and a role requested with no units (US2-3) give nothing.
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  systemd.services.mastodon-media-auto-remove = { };
  fediversity.podRoles.roles.sidekiq.replicas = 2;
}
