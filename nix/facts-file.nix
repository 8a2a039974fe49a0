# The facts document of nodes, written to the store at evaluation time.
# Builtins only. The facts are data: string contexts (a caFile inside a
# package, say) are dropped, so that nothing is built for them.
{ nodes, k8sPodModule ? null, name ? "podroles-facts.json" }:
builtins.toFile name (builtins.unsafeDiscardStringContext (builtins.toJSON
  (import ../nixeval/document.nix { inherit nodes k8sPodModule; })))
