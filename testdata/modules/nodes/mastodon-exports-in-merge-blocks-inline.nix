# mastodon-exports-in-merge-blocks.nix with the module written in the list
# of modules, where it has no file of its own: a unit made by lib.genAttrs
# is located at its block here, never in nixpkgs' lib, where the name was
# made.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR103 unit mastodon-export at mastodon-exports-in-merge-blocks-inline.nix:14:11
# want: PR103 unit mastodon-export-media at mastodon-exports-in-merge-blocks-inline.nix:19:11
(import ../nixos { }).nixosSystem {
  modules = [
    ../hosts/mastodon
    ({ lib, ... }: {
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
      ];
    })
  ];
}
