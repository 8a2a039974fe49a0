# FR-013: off k8s-pod.nix, with a request: a node name that NixOS accepts
# but Kubernetes would not (an underscore) names no Deployment there.
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
  networking.hostName = "mastodon_prod";
}
