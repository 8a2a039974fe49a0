# A node name of 55 characters: <node>-authelia has 64, one too many.
# want: PR607 role authelia at ../lib.nix:66:7
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "mastodon-production-eu-west-1-frontend-and-workers-0001";
  fediversity.lldap.host = "mastodon-production-eu-west-1-frontend-and-workers-0001-lldap.ns.svc";
}
