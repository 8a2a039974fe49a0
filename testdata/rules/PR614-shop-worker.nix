# Checked with PR614-shop.nix: the main pod's Deployment shop-worker has
# the name of role worker's of node shop. The finding is the role's, on
# node shop: this node's names are its own.
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "shop-worker";
  fediversity.lldap.host = "shop-worker-lldap.ns.svc.cluster.local";
}
