# FR-013: the good node with its requests, on a method other than k8s.
let lib = import ../lib.nix; in
lib.node {
  fediversity.k8sPod.enable = false;
}
