# The good node itself: no finding.
(import ../lib.nix).good
