# A host module defines units in three blocks of a mkMerge, the second and
# third by lib.genAttrs and lib.listToAttrs: nix knows no position of those
# names, and each unit is located at the block that holds it, not at the
# first block of the file.
# args: --k8s-pod-module ../k8s-pod.nix
# want: PR103 unit mastodon-export at ../hosts/mastodon/exports.nix:8:7
# want: PR103 unit mastodon-export-media at ../hosts/mastodon/exports.nix:13:7
# want: PR103 unit mastodon-export-statuses at ../hosts/mastodon/exports.nix:18:7
(import ../nixos { }).nixosSystem { modules = [ ../hosts/mastodon ../hosts/mastodon/exports.nix ]; }
