# The facts document of a set of nodes, the same as `podroles facts` prints
# for them: what the flake's lib.mkCheck writes at evaluation time for
# `podroles check --facts` to read in the build sandbox, where no nix runs.
#
# nodes: an attribute set of NixOS systems (or plain configs) by node name,
# e.g. self.nixosConfigurations. Builtins only.
#
# withDefinitions: whether the facts carry the definitions (false only in
# the benchmark that measures what they cost).
{ nodes, k8sPodModule ? null, source ? name: "nixosConfigurations.${name}", withDefinitions ? true }:
let
  node = import ./node.nix { inherit k8sPodModule; };
  # The build that checks the document runs no nix: the definitions that
  # its findings could ask about are read here.
  inherit (import ./locate.nix { sources = [ ]; }) definitions;
in
let
  # A node that nix cannot evaluate must not hide the others (the command
  # reports it beside them). tryEval catches a throw or an assert, but
  # not its message: the entry says so. Any other error (an abort, a
  # type error) stops nix, which then names the node in its trace.
  factsOf = name:
    let
      f = node.systemFacts { describe = "nixosConfigurations.${name}"; inherit name; source = source name; locate = if withDefinitions then definitions else null; } nodes.${name};
      tried = builtins.tryEval (builtins.deepSeq f f);
    in
    builtins.addErrorContext "while reading the facts of node ${name} for podroles"
      (if tried.success then tried.value else { inherit name; source = source name; notEvaluated = "nix could not evaluate the node (a throw or a failed assert, whose message lib.mkCheck cannot read): podroles check --flake .#${name} shows it"; });
in
{
  version = 1;
  nodes = map factsOf (builtins.attrNames nodes);
}
