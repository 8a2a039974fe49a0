# Checked with PR614-shop.nix: node shop's role cron has no request, so it
# makes no Deployment shop-cron beside this node's: no finding.
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "shop-cron";
  fediversity.lldap.host = "shop-cron-lldap.ns.svc.cluster.local";
}
