# How a NixOS system, or a plain config, becomes the facts of one node:
# shared by extract.nix (the binary's extraction) and document.nix (the
# flake's lib.mkCheck), so that both read a node the same way.
#
# k8sPodModule: null, a path given as a string (from the command line), or
# any module (from Nix): every NixOS system is extended with it before its
# facts are read, as the k8s method evaluates it on k8s-pod.nix.
{ k8sPodModule ? null }:
let
  facts = import ./facts.nix;
  module = if builtins.isString k8sPodModule then /. + k8sPodModule else k8sPodModule;
in
rec {
  onK8sPod = describe: system:
    if k8sPodModule == null then system
    else if system ? extendModules then system.extendModules { modules = [ module ]; }
    else throw "podroles: a k8s-pod module needs a NixOS system with extendModules, and ${describe} is a plain config";

  configOf = system: if system ? config then system.config else system;

  # nodeFacts name source system: the node's entry in the facts document,
  # forced whole so that an error in it surfaces here.
  nodeFacts = name: source: system:
    let
      projected = { inherit name source; } // facts (configOf system);
    in
    builtins.deepSeq projected projected;

  # systemFacts describe name source system: the same, on k8s-pod.nix when
  # asked.
  systemFacts = describe: name: source: system: nodeFacts name source (onK8sPod describe system);
}
