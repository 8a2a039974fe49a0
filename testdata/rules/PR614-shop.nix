# Checked with the other fixtures, as the fixtures test checks them all at
# once: role worker makes the Deployment shop-worker, the main pod's of
# node shop-worker (PR614-shop-worker.nix), and role queue-fast makes the
# Deployment and the Service shop-queue-fast, as role fast of node
# shop-queue does (PR614-shop-queue.nix). Role cron has no request, so it
# makes nothing beside node shop-cron's Deployment; node shop-db is off
# k8s-pod.nix and makes no Deployment (PR614-shop-db-off-k8s.nix).
# want: PR614 role queue-fast at PR614-shop.nix:17:5
# want: PR614 role worker at PR614-shop.nix:16:5
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "shop";
  fediversity.lldap.host = "shop-lldap.ns.svc.cluster.local";
  systemd.services = { shop-queue = { }; shop-db = { }; };
  fediversity.podRoles.roles = {
    worker.replicas = 3;
    queue-fast = { replicas = 1; units = [ "shop-queue" ]; ports = [ { port = 80; } ]; };
    cron = { };
    db = { replicas = 1; units = [ "shop-db" ]; };
  };
}
