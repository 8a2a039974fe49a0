# want: PR607 node Mastodon
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "Mastodon";
  fediversity.lldap.host = "Mastodon-lldap.ns.svc";
}
