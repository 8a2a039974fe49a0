# Variables for a modular service of the node that no role runs, and an
# entry with no variables for a service the node lacks: US2-7 asks only
# for variables of a service that does not exist.
let lib = import ../lib.nix; in
lib.node {
  system.services.mastodon-streaming = { };
  fediversity.podRoles.services = {
    mastodon-streaming.environment.STREAMING_CLUSTER_NUM = "2";
    peertube.environment = { };
  };
}
