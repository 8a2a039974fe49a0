# Units of exports that a host adds to mastodon, in the blocks of a mkMerge:
# one written out, the others made by lib.genAttrs and lib.listToAttrs
# (the tests of locations: each unit is at the block that holds its name).
{ lib, ... }:
{
  config = lib.mkMerge [
    {
      systemd.services.mastodon-export = {
        script = "tootctl export";
      };
    }
    {
      systemd.services = lib.genAttrs [ "mastodon-export-media" ] (name: {
        script = "tootctl ${name}";
      });
    }
    {
      systemd.services = lib.listToAttrs [
        (lib.nameValuePair "mastodon-export-statuses" { script = "tootctl statuses"; })
      ];
    }
  ];
}
