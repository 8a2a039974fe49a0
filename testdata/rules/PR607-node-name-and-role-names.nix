# The node name is no DNS-1123 label, and so are three role names on their
# own, whatever the node is called: each is refused now, not after the node
# is renamed. (The worker role's name is good: only the node hides it.)
# want: PR607 node Mastodon at PR607-node-name-and-role-names.nix:10:3
# want: PR607 role bücher at PR607-node-name-and-role-names.nix:15:7
# want: PR607 role ok- at PR607-node-name-and-role-names.nix:16:7
# want: PR607 role a-role-name-of-sixty-four-characters-which-no-dns-label-can-hold at PR607-node-name-and-role-names.nix:17:7
let lib = import ../lib.nix; in
lib.node {
  networking.hostName = "Mastodon";
  fediversity.lldap.host = "Mastodon-lldap.ns.svc";
  systemd.services = { books = { }; ok = { }; long = { }; };
  fediversity.podRoles = {
    roles = {
      "bücher" = { replicas = 1; units = [ "books" ]; };
      "ok-" = { replicas = 1; units = [ "ok" ]; };
      a-role-name-of-sixty-four-characters-which-no-dns-label-can-hold = { replicas = 1; units = [ "long" ]; };
    };
  };
}
