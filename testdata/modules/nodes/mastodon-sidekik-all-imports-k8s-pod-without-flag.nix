# The node of mastodon-imports-k8s-pod.nix (the host imports k8s-pod.nix
# itself and misspells a unit), checked without --k8s-pod-module: podroles
# is not told which file is k8s-pod.nix, and the misspelled name is a unit
# only through the module's condition, which podroles cannot tell from a
# unit of the node. It warns, at the list, and names the module to give.
# want: PR107 unit mastodon-sidekik-all at mastodon-imports-k8s-pod.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
import ./mastodon-imports-k8s-pod.nix
