# The mastodon node of ../mastodon.nix after an upgrade of the mastodon
# module renamed two units (the kind of change US2 is about): the role and
# mainUnits still name the old units, so the real units would get no pod,
# and a run-once unit was put in sharedUnits. `podroles check` refuses it.
let
  node = import ../mastodon.nix;
in
node // {
  systemd.services = removeAttrs node.systemd.services [ "mastodon-sidekiq-all" "mastodon-streaming-2" ]
    // { mastodon-sidekiq-default = { }; mastodon-streaming = { }; };
  fediversity.k8sPod = node.fediversity.k8sPod;
  fediversity.podRoles = node.fediversity.podRoles // {
    roles.sidekiq = node.fediversity.podRoles.roles.sidekiq // { units = [ "mastodon-sidekiq-all" ]; };
    mainUnits = builtins.filter (u: u != "mastodon-init-db") node.fediversity.podRoles.mainUnits;
    sharedUnits = node.fediversity.podRoles.sharedUnits ++ [ "mastodon-init-db" ];
  };
}
