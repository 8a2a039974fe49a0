# How a NixOS system, or a plain config, becomes the facts of one node:
# shared by extract.nix (the binary's extraction) and document.nix (the
# flake's lib.mkCheck), so that both read a node the same way. Builtins only:
# the module system's own values (mkOverride, definitionsWithLocations) are
# written and read as nixpkgs' lib makes them, without importing it.
#
# k8sPodModule: null, a path given as a string (from the command line), or
# any module (from Nix): every NixOS system is extended with it before its
# facts are read, as the k8s method evaluates it on k8s-pod.nix.
#
# k8sPodModuleAliases: the other names of the file k8sPodModule names (the
# path with the symbolic links of its folders resolved, and of the file
# itself): a host that imports the module by one of them defines the same
# conditions, and a checkout reached through a link is the same checkout.
#
# listsProbe: whether systems of the module system are probed for FR-007
# (false only in the benchmark that measures what the probe costs).
{ k8sPodModule ? null, k8sPodModuleAliases ? [ ], listsProbe ? true }:
let
  inherit (builtins) attrNames concatMap elem filter isAttrs isString listToAttrs substring stringLength tryEval deepSeq pathExists;

  facts = import ./facts.nix;

  # The file that the module system records for the definitions of a
  # k8s-pod module that is no file of its own (an attribute set from Nix).
  anonymousK8sPodFile = "<podroles: the k8s-pod module>";

  # A k8s-pod module and the files its definitions come from. Wrapped, a
  # module without a file gets one of its own, and a path keeps its path:
  # a node that imports the same file itself has it once (the module system
  # keys a file's module by its path).
  k8sPod = module: files: {
    module = { _file = anonymousK8sPodFile; imports = [ module ]; };
    files = files ++ [ anonymousK8sPodFile ];
  };

  given =
    if k8sPodModule == null then null
    else if isString k8sPodModule then k8sPod (/. + k8sPodModule) ([ k8sPodModule ] ++ k8sPodModuleAliases)
    else k8sPod k8sPodModule (if builtins.isPath k8sPodModule then [ (toString k8sPodModule) ] else [ ]);

  # mkOverride as nixpkgs' lib writes it.
  mkOverride = priority: content: { _type = "override"; inherit priority content; };

  # A system of the module system (lib.evalModules, lib.nixosSystem): it
  # has options and can be extended. The stand-in nixos-lite has no options.
  isModuleSystem = system: isAttrs system && system ? options && system ? extendModules;

  hasPrefix = prefix: s: substring 0 (stringLength prefix) s == prefix;
in
rec {
  # k8sPodIn { checkout, storeRoot }: the k8s-pod module for a flake's
  # nodes. When the module given on the command line is a file of the
  # flake's checkout that nix copied with it, the copy in the store stands
  # in for it: a node that imports k8s-pod.nix itself imports that copy,
  # and the module system must see one module, not two. (The copy is a
  # string of the store, which import takes and the module system keys by
  # the same name as the path.)
  #
  # The module also carries roots, the flake's source in the store, whose
  # files are the node's own (see importedAs).
  k8sPodIn = { checkout, storeRoot }:
    let
      names = if isString k8sPodModule then filter (hasPrefix (checkout + "/")) ([ k8sPodModule ] ++ k8sPodModuleAliases) else [ ];
      inCheckout = builtins.head names;
      copy = storeRoot + substring (stringLength checkout) (stringLength inCheckout) inCheckout;
      module =
        if checkout == "" || names == [ ] then given
        else if pathExists copy then k8sPod copy ([ copy k8sPodModule ] ++ k8sPodModuleAliases) else given;
    in
    if given == null then null
    else module // { roots = if storeRoot == "" then [ ] else [ storeRoot ]; };

  # configOf describe system: the config of a NixOS system, or a config
  # itself; anything else (a module function, a list) is refused by name.
  configOf = describe: system:
    if builtins.isFunction system then
      throw "podroles: ${describe} is a function (a NixOS module?): give the node's config attribute set, or a NixOS system such as nixpkgs.lib.nixosSystem { modules = [ ... ]; }"
    else if !isAttrs system then
      throw "podroles: ${describe} is a ${builtins.typeOf system}, not a node's config attribute set or a NixOS system"
    else if system ? config then system.config
    else system;

  # checked refuses what is no system before extendModules is tried on it.
  checked = describe: system: builtins.seq (configOf describe system) system;

  # hostNameLeftDefault system: whether a system of the module system left
  # networking.hostName at the option's default (NixOS's "nixos"): no
  # module defined it, so it names no node.
  hostNameLeftDefault = system:
    isModuleSystem system && (system.options.networking.hostName.highestPrio or 0) >= 1500;

  # probeLists system: FR-007 on a system of the module system. The system
  # is extended with systemd.services overridden, at the highest priority,
  # by a value that throws; then only the three lists are forced, each under
  # tryEval. A list that fails reads config.systemd.services, which on
  # k8s-pod.nix (whose conditions come from the lists) is an infinite
  # recursion. null for a system that is no module system. The files of the
  # k8s-pod module are disabled in the probe: a node that imports it itself
  # would otherwise recurse in the probe too (the module's definition of
  # systemd.services is computed from the lists).
  probeLists = k8sPodFiles: system:
    if !listsProbe || !(isModuleSystem system) then null
    else
      let
        probed = system.extendModules {
          modules = [ {
            _file = "<podroles: FR-007 probe>";
            disabledModules = filter (f: hasPrefix "/" f) k8sPodFiles;
            config.systemd.services = mkOverride 0 (throw "podroles: FR-007 probe: the lists read config.systemd.services");
          } ];
        };
        podRoles = probed.config.fediversity.podRoles or { };
        fails = v: !(tryEval (deepSeq v true)).success;
        roles = tryEval (attrNames (podRoles.roles or { }));
      in
      {
        roleNames = !roles.success;
        roles = if roles.success then filter (r: fails (podRoles.roles.${r}.units or [ ])) roles.value else [ ];
        mainUnits = fails (podRoles.mainUnits or [ ]);
        sharedUnits = fails (podRoles.sharedUnits or [ ]);
      };

  probeFailed = p: p != null && (p.roleNames || p.roles != [ ] || p.mainUnits || p.sharedUnits);

  # present value: whether a definition of one unit defines it, after
  # mkIf, mkMerge, mkOverride and mkOrder: `u = mkIf false { ... }` does not.
  present = v:
    let type = if isAttrs v then v._type or null else null; in
    if type == "if" then v.condition && present v.content
    else if type == "merge" then builtins.any present v.contents
    else if type == "override" || type == "order" then present v.content
    else true;

  # k8sPodFilesOf files base onPod: the files whose definitions are the k8s-pod
  # module's: its own, and, on a node that imports the module itself, those
  # of every module that only the k8s-pod module imports (a k8s-pod.nix of
  # several files puts its conditions in a file it imports). The module
  # system's graph of imports says which; a lib without it, or a node that
  # is not on k8s-pod.nix by itself, needs no more than the files given
  # (the node without the module then tells the rest, see addedUnits).
  k8sPodFilesOf = files: base: onPod:
    let
      ofModule = m: elem m.key files || elem m.file files;
      elsewhere = ms: concatMap (m: if ofModule m then [ ] else [ m.file ] ++ elsewhere m.imports) ms;
      others = elsewhere onPod.graph;
      onK8sPodByItself = (configOf "" base).fediversity.k8sPod.enable or false;
    in
    if !(onPod ? graph) || !onK8sPodByItself then files
    else filter (f: elem f files || !(elem f others)) (modulesBelow files onPod.graph);

  # addedUnits files base onPod: the units of the node on k8s-pod.nix that
  # the node does not have without it (FR-008 judges the lists against the
  # node before k8s-pod.nix adds anything): a unit that the system without
  # the module lacks (a host's own module may put the conditions on the
  # listed names under fediversity.k8sPod.enable); and on the module system
  # also a unit whose definitions all come from the k8s-pod module's files
  # (the conditions it puts on every listed name, in a node that imports
  # the module itself and so has them without the extension too).
  addedUnits = files: base: onPod:
    let
      units = attrNames (onPod.config.systemd.services or { });
      ownNames = definedOutside (k8sPodFilesOf files base onPod) onPod;
      before = (configOf "" base).systemd.services or { };
    in
    if isModuleSystem onPod && onPod.options ? systemd.services.definitionsWithLocations
    then filter (u: !(before ? ${u}) || !(ownNames ? ${u})) units
    else filter (u: !(before ? ${u})) units;

  # nodeFacts describe extra config: the node's entry in the facts
  # document, with extra (its name and source, ...) merged in, forced whole
  # so that an error in it surfaces here.
  nodeFacts = describe: extra: config:
    let
      projected = facts config // extra;
    in
    deepSeq projected projected;

  # onK8sPod { describe, k8sPod ? the module given } system: the system
  # extended with the k8s-pod module (as importedAs names it for the
  # system), as the k8s method evaluates it; the system itself without a
  # module.
  onK8sPod = { describe, k8sPod ? given }: base:
    if k8sPod == null then base
    else if isAttrs base && base ? extendModules then base.extendModules { modules = [ k8sPod.module ]; }
    else throw "podroles: a k8s-pod module needs a NixOS system with extendModules, and ${describe} is a plain config";

  # importedAs base k8sPod: the k8s-pod module given on the command line
  # (or by mkCheck) by the name under which the node already imports its
  # file: the module system keys a file's module by its path, and must see
  # one module, not two. The node's import is the same file when it is one
  # of the module's aliases (a host imports k8s-pod.nix by its real path,
  # the command line names a link to it), or a file of the host's own with
  # the same text (the host imports ./link.nix, a link to k8s-pod.nix, and
  # the command line names k8s-pod.nix; or an unchanged copy of it). The
  # host's own files are those outside the store and outside NixOS's
  # modulesPath, or in the flake's source (k8sPod.roots): the thousands of
  # NixOS's own modules are never read. The name is added to the module's
  # files.
  importedAs = base: k8sPod:
    let
      keys = ms: concatMap (m: [ m.key ] ++ keys m.imports) ms;
      imported = filter isString (keys base.graph);
      main = builtins.head k8sPod.files;
      text = p: builtins.hashFile "sha256" (if pathExists (p + "/default.nix") then p + "/default.nix" else p);
      mainText = text main;
      roots = k8sPod.roots or [ ];
      # NixOS's modules may be outside the store too (a nixpkgs checkout).
      nixos = toString (base._module.specialArgs.modulesPath or "");
      ofHost = k: hasPrefix "/" k && (!hasPrefix (builtins.storeDir + "/") k || builtins.any (r: hasPrefix (r + "/") k) roots)
        && (nixos == "" || !hasPrefix (nixos + "/") k) && pathExists k;
      found = filter (k: k != main && (elem k k8sPodModuleAliases || ofHost k && text k == mainText)) imported;
      name = builtins.head found;
    in
    if k8sPod == null || !(base ? graph) || !(isString main && hasPrefix "/" main) || elem main imported || found == [ ] then k8sPod
    else k8sPod // {
      module = { _file = anonymousK8sPodFile; imports = [ (if hasPrefix (builtins.storeDir + "/") name then name else /. + name) ]; };
      files = k8sPod.files ++ filter (f: !(elem f k8sPod.files)) found;
    };

  # modulesBelow files graph: files and the files of every module that a
  # module of theirs imports, by the module system's graph of imports.
  modulesBelow = files: graph:
    let
      all = ms: concatMap (m: [ m.file ] ++ all m.imports) ms;
      from = ms: concatMap (m: if elem m.key files || elem m.file files then all [ m ] else from m.imports) ms;
    in
    files ++ from graph;

  # definedOutside files system: the names of the units that a definition
  # from a file outside files defines (after mkIf, mkMerge, mkOverride and
  # mkOrder), as an attribute set.
  definedOutside = files: system:
    let
      own = filter (d: !(elem d.file files) && isAttrs d.value) system.options.systemd.services.definitionsWithLocations;
    in
    listToAttrs (concatMap
      (d: map (name: { inherit name; value = null; }) (filter (name: present d.value.${name}) (attrNames d.value)))
      own);

  # setsTrue value: whether a definition is true, after mkIf, mkMerge,
  # mkOverride and mkOrder.
  setsTrue = v:
    let type = if isAttrs v then v._type or null else null; in
    if type == "if" then v.condition && setsTrue v.content
    else if type == "merge" then builtins.any setsTrue v.contents
    else if type == "override" || type == "order" then setsTrue v.content
    else v == true;

  # hostK8sPodModules files base: the modules that the node imports itself
  # which act as k8s-pod.nix does, other than the k8s-pod module of files
  # (and the modules it imports): a host that imports k8s-pod.nix without
  # --k8s-pod-module, or a different copy of it. Such a module puts the
  # node on k8s-pod.nix (a definition of fediversity.k8sPod.enable = true),
  # and it or a module it imports puts a condition on every listed name,
  # which makes a unit of the name. The second is tested as it is: the node
  # is extended with a name no unit has in sharedUnits, and a file whose
  # definitions of systemd.services then define that name makes units of
  # the names in the lists. A host's own module that sets enable (and
  # defines its units, as a test node may) defines no such name. [] for a
  # node that is not on k8s-pod.nix by itself, or no module system; only a
  # node with a module that sets enable and is not the given one pays for
  # the extension.
  hostK8sPodModules = files: base:
    let
      graph = base.graph or [ ];
      named = modulesBelow files graph;
      defs = base.options.fediversity.k8sPod.enable.definitionsWithLocations or [ ];
      enabling = builtins.foldl' (acc: f: if elem f acc || elem f named then acc else acc ++ [ f ]) [ ] (map (d: d.file) (filter (d: setsTrue d.value) defs));
      listedName = "podroles-fr-008-probe-of-conditions";
      extended = base.extendModules {
        modules = [ { _file = "<podroles: FR-008 conditions probe>"; config.fediversity.podRoles.sharedUnits = mkOverride 0 [ listedName ]; } ];
      };
      conditions = map (d: d.file) (filter (d: isAttrs d.value && d.value ? ${listedName} && present d.value.${listedName})
        (extended.options.systemd.services.definitionsWithLocations or [ ]));
      makesConditions = f: builtins.any (g: elem g conditions) (modulesBelow [ f ] graph);
    in
    if !(isModuleSystem base) || !((configOf "" base).fediversity.k8sPod.enable or false) || enabling == [ ] then [ ]
    else filter makesConditions enabling;

  # unjudged modules base sourceRoot: for each module of hostK8sPodModules,
  # its file (in the checkout, for a flake) and the names in the lists that
  # are units only through it: units that no file outside it (and outside
  # the modules it imports) defines. Its conditions make a unit of a
  # misspelled name: FR-008 could not judge these names before it. A
  # module whose every listed name is defined elsewhere too hides nothing,
  # and is left out.
  unjudged = modules: base: sourceRoot:
    let
      config = configOf "" base;
      podRoles = config.fediversity.podRoles or { };
      listed = concatMap (r: r.units or [ ]) (builtins.attrValues (podRoles.roles or { })) ++ podRoles.mainUnits or [ ] ++ podRoles.sharedUnits or [ ];
      units = config.systemd.services or { };
      shown = f:
        if sourceRoot == null || sourceRoot.checkout == "" || !hasPrefix (sourceRoot.storeRoot + "/") f then f
        else sourceRoot.checkout + substring (stringLength sourceRoot.storeRoot) (stringLength f) f;
      of = f:
        let
          outside = definedOutside (modulesBelow [ f ] (base.graph or [ ])) base;
          only = builtins.foldl' (acc: u: if elem u acc || !(units ? ${u}) || outside ? ${u} then acc else acc ++ [ u ]) [ ] listed;
        in
        { file = shown f; units = only; };
    in
    filter (m: m.units != [ ]) (map of modules);

  # listsFailingProbe p: the options of the lists that failed the probe.
  listsFailingProbe = p:
    (if p.roleNames then [ "fediversity.podRoles.roles" ] else [ ])
    ++ map (r: "fediversity.podRoles.roles.${r}.units") p.roles
    ++ (if p.mainUnits then [ "fediversity.podRoles.mainUnits" ] else [ ])
    ++ (if p.sharedUnits then [ "fediversity.podRoles.sharedUnits" ] else [ ]);

  # systemFacts { describe, name, source, k8sPod ? the module given, sourceRoot ? null, extra ? { }, onProbeFailed ? _: v: v } system:
  # the entry of a system. A system of the module system is probed for
  # FR-007 first. With a k8s-pod module, the system is extended with it,
  # and the units only the module made are named; unless the probe failed:
  # on k8s-pod.nix such a node's evaluation is an infinite recursion, so its
  # facts are those of the node as given, which says so. A node that is on
  # k8s-pod.nix by itself cannot be saved that way: onProbeFailed lists
  # (extract.nix traces them) lets podroles explain the infinite recursion
  # that nix then stops with. The modules that the node imports itself and
  # that act as k8s-pod.nix does, other than the given one, are named in the
  # facts (k8sPod.hostModules) with the names in the lists that are units
  # only through them; sourceRoot ({ checkout, storeRoot } of a flake) writes
  # their files as the checkout's.
  systemFacts = { describe, name, source, k8sPod ? given, sourceRoot ? null, extra ? { }, onProbeFailed ? _: v: v }: system:
    let
      base = checked describe system;
      module = importedAs base k8sPod;
      moduleFiles = if module == null then [ ] else module.files;
      probe = probeLists moduleFiles base;
      skipK8sPod = module != null && probeFailed probe;
      onPod = if skipK8sPod then base else onK8sPod { inherit describe; k8sPod = module; } base;
      config = configOf describe onPod;
      added = if module == null || skipK8sPod then null else addedUnits moduleFiles base onPod;
      hidden = unjudged (hostK8sPodModules moduleFiles base) base sourceRoot;
      probeFacts = if probe == null then { } else { listsProbe = probe // (if skipK8sPod then { k8sPodModuleSkipped = true; } else { }); };
      k8sPodFacts = (if added == null then { } else { addedUnits = added; }) // (if hidden == [ ] then { } else { hostModules = hidden; });
      addedFacts = if k8sPodFacts == { } then { } else { k8sPod = (facts config).k8sPod // k8sPodFacts; };
    in
    (if probeFailed probe then onProbeFailed (listsFailingProbe probe) else (v: v))
      (nodeFacts describe ({ inherit name source; } // extra // probeFacts // addedFacts) config);
}
