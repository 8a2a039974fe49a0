# FR-013: off k8s-pod.nix, with a request, only the assertions of FR-008
# apply. A role name that is no DNS-1123 label names no Deployment there,
# since no Kubernetes sees it: no finding.
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  systemd.services.mastodon-sidekiq-all = { };
  fediversity.podRoles.roles.sidekiq_all = { replicas = 2; units = [ "mastodon-sidekiq-all" ]; };
}
