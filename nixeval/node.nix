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

  # configOf describe system: the config of a NixOS system, or a config
  # itself; anything else (a module function, a list) is refused by name.
  configOf = describe: system:
    if builtins.isFunction system then
      throw "podroles: ${describe} is a function (a NixOS module?): give the node's config attribute set, or a NixOS system such as nixpkgs.lib.nixosSystem { modules = [ ... ]; }"
    else if !builtins.isAttrs system then
      throw "podroles: ${describe} is a ${builtins.typeOf system}, not a node's config attribute set or a NixOS system"
    else if system ? config then system.config
    else system;

  # nodeFacts describe extra system: the node's entry in the facts
  # document, with extra (its name and source) merged in, forced whole so
  # that an error in it surfaces here.
  nodeFacts = describe: extra: system:
    let
      projected = extra // facts (configOf describe system);
    in
    builtins.deepSeq projected projected;

  # systemFacts describe name source system: the entry of a system, on
  # k8s-pod.nix when asked.
  systemFacts = describe: name: source: system:
    nodeFacts describe { inherit name source; } (onK8sPod describe (checked describe system));

  # checked refuses what is no system before extendModules is tried on it.
  checked = describe: system: builtins.seq (configOf describe system) system;
}
