# Extracts the facts of nodes, one node per call, for the workers of
# serve.nix: a flake is fetched and its outputs evaluated once per worker,
# whatever number of its nodes the worker evaluates, and nix pays once per
# worker for what nodes share (nixpkgs' module system, a flake's inputs).
#
# request (request.json beside this file) = {
#   sources = [ { kind = "flake"; ref = "git+file:///abs/repo?dir=sub"; checkout = "/abs/repo"; attr = "node" or null;
#                 read = "git+file:///copy?dir=sub", where nix cannot name the work tree; }
#               { kind = "file"; path = "/abs/node.nix"; name = "node"; } ];
#   k8sPodModule = "/abs/k8s-pod.nix" or null;
#   k8sPodModuleAliases = [ the same file by its real paths ];
#   definitions = true, for facts that carry the definitions;
# };
#
# names I: the names of the nodes of flake source I (nixosConfigurations),
# without evaluating any node.
# node I ATTR: the facts of the node ATTR of flake source I, or of the node
# of file source I (ATTR null). Its entry has origin = I, which podroles
# keeps to locate the node's definitions later (locate.nix).
#
# Before forcing a source, and again before each node, it traces
# `podroles-eval {"source":I,"node":N}` (for a flake, also
# `{"source":I,"root":STORE}`: where its source is in the store): when nix
# fails, the last such line on stderr tells podroles which source and node
# the error belongs to. Before the facts of a node whose lists failed the
# FR-007 probe, the line also has "lists": the options that read
# config.systemd.services.
request:
let
  node = import ./node.nix { k8sPodModule = request.k8sPodModule or null; k8sPodModuleAliases = request.k8sPodModuleAliases or [ ]; listsProbe = request.listsProbe or true; };

  mark = at: value: builtins.trace "podroles-eval ${builtins.toJSON at}" value;

  # The definitions that findings could ask about, carried in the facts
  # (podroles facts), as lib.mkCheck's document carries them; else null.
  locate = if request.definitions or false then (import ./locate.nix { sources = [ ]; }).definitions else null;

  sourceAt = i: builtins.elemAt request.sources i;

  # Each flake once: the worker keeps the list, so a flake is fetched and
  # its outputs evaluated for the first of its nodes only.
  flakes = map (s: if s.kind == "flake" then builtins.getFlake (s.read or s.ref) else null) request.sources;

  systemsOf = i:
    (builtins.elemAt flakes i).nixosConfigurations or
      (throw "podroles: flake ${(sourceAt i).display} has no nixosConfigurations");

  # The flake's source in the store, and the checkout it was copied from.
  sourceRootOf = i:
    let flake = builtins.elemAt flakes i; in
    { checkout = (sourceAt i).checkout or ""; storeRoot = toString (flake.sourceInfo.outPath or flake.outPath); };

  # rooted I value: value after a mark that says where flake source I is in
  # the store, so that an error names the checkout's files. It comes after
  # the source's own mark, since getFlake may fail.
  rooted = i: mark { source = i; root = (sourceRootOf i).storeRoot; };

  flakeNode = i: s: name:
    let
      sourceRoot = sourceRootOf i;
      systems = systemsOf i;
      k8sPod = node.k8sPodIn sourceRoot;
    in
    rooted i (mark { source = i; node = name; } (
      if systems ? ${name}
      then node.systemFacts {
        describe = "nixosConfigurations.${name}";
        inherit name k8sPod sourceRoot locate;
        source = "flake:${s.ref}#${name}";
        extra.origin = i;
        onProbeFailed = lists: mark { source = i; node = name; inherit lists; };
      } systems.${name}
      else throw "podroles: flake ${s.display} has no nixosConfigurations.${name}; it has: ${builtins.concatStringsSep ", " (builtins.attrNames systems)}"
    ));

  fileNode = i: s:
    let
      system = node.checked s.display (import (/. + s.path));
      hostName = (node.configOf s.display system).networking.hostName or "";
      # A node that sets no hostName, or leaves NixOS's default, is
      # named after its file.
      named = builtins.isString hostName && hostName != "" && !(node.hostNameLeftDefault system);
      name = if named then hostName else s.name;
    in
    mark { source = i; node = name; } (
      node.systemFacts {
        describe = s.display;
        inherit name locate;
        source = "file:${s.display}";
        extra = { origin = i; } // (if named then { } else { namedAfterFile = true; });
        onProbeFailed = lists: mark { source = i; node = name; inherit lists; };
      } system
    );
in
{
  names = i: mark { source = i; } (rooted i (builtins.attrNames (systemsOf i)));

  node = i: attr:
    let s = sourceAt i; in
    mark { source = i; } (
      if s.kind == "flake" then flakeNode i s attr
      else if s.kind == "file" then fileNode i s
      else throw "podroles: unknown source kind ${s.kind}"
    );
}
