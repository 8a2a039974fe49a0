# Extracts the facts of every node of a request in one evaluation, so that
# nix pays once for what nodes share (a flake's inputs, nixpkgs' module
# system) instead of once per node.
#
# request (request.json beside this file) = {
#   sources = [ { kind = "flake"; ref = "git+file:///abs/repo?dir=sub"; checkout = "/abs/repo"; attr = "node" or null; }
#               { kind = "file"; path = "/abs/node.nix"; name = "node"; } ];
#   k8sPodModule = "/abs/k8s-pod.nix" or null;
#   k8sPodModuleAliases = [ the same file by its real paths ];
# };
#
# Each node's entry has origin = the index of its source, which podroles
# keeps to locate the node's definitions later (locate.nix).
#
# Before forcing a source's node list, and again before each node, it traces
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

  fromFlake = i: s:
    let
      flake = builtins.getFlake s.ref;
      systems = flake.nixosConfigurations or
        (throw "podroles: flake ${s.display} has no nixosConfigurations");
      names = if s.attr == null then builtins.attrNames systems else [ s.attr ];
      # The flake's source in the store, and the checkout it was copied from.
      sourceRoot = { checkout = s.checkout or ""; storeRoot = toString (flake.sourceInfo.outPath or flake.outPath); };
      k8sPod = node.k8sPodIn sourceRoot;
      one = name: mark { source = i; node = name; } (
        if systems ? ${name}
        then node.systemFacts {
          describe = "nixosConfigurations.${name}";
          inherit name k8sPod sourceRoot;
          source = "flake:${s.ref}#${name}";
          extra.origin = i;
          onProbeFailed = lists: mark { source = i; node = name; inherit lists; };
        } systems.${name}
        else throw "podroles: flake ${s.display} has no nixosConfigurations.${name}; it has: ${builtins.concatStringsSep ", " (builtins.attrNames systems)}"
      );
    in
    # The second mark says where the flake's source is in the store, so
    # that an error names the checkout's files: after the first, since
    # getFlake may fail.
    mark { source = i; } (mark { source = i; root = sourceRoot.storeRoot; } (map one names));

  fromFile = i: s:
    [
      (mark { source = i; } (
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
            inherit name;
            source = "file:${s.display}";
            extra = { origin = i; } // (if named then { } else { namedAfterFile = true; });
            onProbeFailed = lists: mark { source = i; node = name; inherit lists; };
          } system
        )
      ))
    ];

  fromSource = i: s:
    if s.kind == "flake" then fromFlake i s
    else if s.kind == "file" then fromFile i s
    else throw "podroles: unknown source kind ${s.kind}";
in
builtins.concatLists (builtins.genList (i: fromSource i (builtins.elemAt request.sources i)) (builtins.length request.sources))
