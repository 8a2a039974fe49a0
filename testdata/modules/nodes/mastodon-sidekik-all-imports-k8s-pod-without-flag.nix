# The node of mastodon-imports-k8s-pod.nix (the host imports k8s-pod.nix
# itself and misspells a unit), checked without --k8s-pod-module: podroles
# is not told which file is k8s-pod.nix, but every definition of the
# misspelled name sets only the condition that the module puts on every
# listed name, and nothing that runs: it is no unit of the node.
# want: PR101 unit mastodon-sidekik-all at mastodon-imports-k8s-pod.nix:12:7
# want: PR103 unit mastodon-sidekiq-all at ../hosts/mastodon/mastodon.nix:25:5
import ./mastodon-imports-k8s-pod.nix
