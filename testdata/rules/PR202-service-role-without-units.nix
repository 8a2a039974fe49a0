# A requested role of a modular service has no units by design: the roles
# of lldap and authelia in the good node, and one more here.
let lib = import ../lib.nix; in
lib.node {
  system.services.mastodon-streaming = { };
  fediversity.podRoles.roles.streaming = {
    replicas = 2;
    service = "mastodon-streaming";
    units = [ ];
  };
}
