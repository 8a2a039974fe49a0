# A node that nix cannot evaluate: a list left open.
{
  networking.hostName = "forum";
  systemd.services.forum = { };
  fediversity.podRoles.mainUnits = [ "forum" ;
}
