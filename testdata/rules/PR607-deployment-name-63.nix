# A node name of 54 characters: <node>-authelia has 63, the most a label has.
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "mastodon-production-eu-west-1-frontend-and-workers-001";
  fediversity.lldap.host = "mastodon-production-eu-west-1-frontend-and-workers-001-lldap.ns.svc";
}
