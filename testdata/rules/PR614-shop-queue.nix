# Checked with PR614-shop.nix: role fast makes the Deployment and the
# Service shop-queue-fast, as role queue-fast of node shop does.
# want: PR614 role fast at PR614-shop-queue.nix:9:3
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "shop-queue";
  fediversity.lldap.host = "shop-queue-lldap.ns.svc.cluster.local";
  systemd.services.queue-fast = { };
  fediversity.podRoles.roles.fast = { replicas = 2; units = [ "queue-fast" ]; ports = [ { port = 443; } ]; };
}
