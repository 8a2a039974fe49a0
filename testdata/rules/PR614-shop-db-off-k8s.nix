# Checked with PR614-shop.nix: this node is off k8s-pod.nix, where no
# Deployment is named after it, so node shop's role db makes the only
# shop-db: no finding.
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "shop-db";
  fediversity.k8sPod.enable = false;
}
