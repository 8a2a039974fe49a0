# want: PR607 node Mastodon at PR607-node-name-uppercase.nix:4:3
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "Mastodon";
  fediversity.lldap.host = "Mastodon-lldap.ns.svc";
}
