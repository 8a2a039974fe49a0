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
  inherit (builtins) attrNames concatMap elem filter isAttrs isFunction isString listToAttrs substring stringLength tryEval deepSeq pathExists;

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
      throw "podroles: ${describe} is ${aKind system}, not a node's config attribute set or a NixOS system"
    else if system ? config then system.config
    else system;

  # aKind v: the kind of v, with its article, for a message: "an integer",
  # not "a int" (every builtins.typeOf; facts/parse.go's nixKind says the
  # same of the kinds the facts carry).
  aKind = v: {
    int = "an integer";
    float = "a float";
    bool = "a boolean";
    string = "a string";
    path = "a path";
    null = "null";
    set = "an attribute set";
    list = "a list";
    lambda = "a function";
  }.${builtins.typeOf v} or "a ${builtins.typeOf v}";

  # checked refuses what is no system before extendModules is tried on it,
  # and a file that is no node at all (notNode).
  checked = describe: system:
    let why = notNode describe system; in
    if why != null then throw "podroles: ${describe} ${why}"
    else builtins.seq (configOf describe system) system;

  # The node surface (docs/node-surface.md): the options below each
  # top-level name that a node sets.
  surface = {
    systemd = [ "services" "stateMigrations" ];
    system = [ "services" ];
    networking = [ "firewall" ];
    fediversity = [ "podRoles" "k8sPod" "lldap" "authelia" ];
  };

  # notNode describe value: why a value that would be taken as a node's
  # config is none, or null. A plain attribute set that sets nothing of
  # the surface would pass every rule ("0 rules run"), as would a flake's
  # flake.nix, a module whose imports podroles never reads, and a node whose
  # top-level name is misspelled: each is refused, naming what it is. A
  # NixOS system is always taken: the module system refuses what it does
  # not know itself.
  notNode = describe: v:
    let
      system = v ? extendModules || (v._type or null) == "configuration" || v ? config && v ? pkgs;
      moduleKeys = filter (k: v ? ${k}) [ "imports" "options" "disabledModules" "_file" ];
      conditional = isAttrs (v.config or null) && elem (v.config._type or null) [ "if" "merge" "override" "order" ];
      config = v.config or v;
      names = attrNames config;
      unknown = filter (n: !(surface ? ${n})) names;
      near = concatMap (n: let top = closest n (attrNames surface); in if top == null then [ ] else [ { inherit n top; } ]) unknown;
      sets = builtins.any (top: builtins.any (o: config.${top} ? ${o}) surface.${top}) (filter (top: isAttrs (config.${top} or null)) (attrNames surface));
      dir = dirOf describe;
      flakeRef = if dir == "." || hasPrefix "/" dir || hasPrefix "./" dir || hasPrefix "../" dir then dir else "./" + dir;
    in
    if !isAttrs v || system then null
    else if isFunction (v.outputs or null) then
      "is a flake (it has outputs), not a node: check its nodes with --flake ${flakeRef}, or one of them with --flake ${flakeRef}#NODE"
    else if moduleKeys != [ ] || conditional then
      "is a NixOS module (it has ${if moduleKeys != [ ] then builtins.head moduleKeys else "a conditional config"} at the top), not a node: podroles reads no module's imports or options; give a NixOS system of it, such as nixpkgs.lib.nixosSystem { modules = [ ./${baseNameOf describe} ]; }, or check the host's flake with --flake"
    else if !isAttrs config then null
    else if near != [ ] then
      let m = builtins.head near; in
      "sets ${m.n}, which is no option of the node surface: did you mean ${m.top}?"
    else if !sets then
      "sets nothing of the node surface (systemd.services, system.services, networking.firewall, fediversity.podRoles, fediversity.k8sPod, fediversity.lldap, fediversity.authelia; docs/node-surface.md)${if unknown == [ ] then "" else ", only ${builtins.concatStringsSep ", " unknown}"}: it is no node, and every rule would pass it"
    else null;

  # closest name names: the one of names that name looks like a
  # misspelling of (within two edits, the same in another case first), or
  # null.
  closest = name: names:
    let
      scored = map (n: { inherit n; d = distance (lower name) (lower n); }) (filter (n: n != name) names);
      best = builtins.foldl' (b: c: if c.d <= 2 && (b == null || c.d < b.d) then c else b) null scored;
    in
    if best == null then null else best.n;

  lower = builtins.replaceStrings
    [ "A" "B" "C" "D" "E" "F" "G" "H" "I" "J" "K" "L" "M" "N" "O" "P" "Q" "R" "S" "T" "U" "V" "W" "X" "Y" "Z" ]
    [ "a" "b" "c" "d" "e" "f" "g" "h" "i" "j" "k" "l" "m" "n" "o" "p" "q" "r" "s" "t" "u" "v" "w" "x" "y" "z" ];

  # distance a b: the Levenshtein distance of two short strings, a row of
  # the table at a time.
  distance = a: b:
    let
      chars = s: builtins.genList (i: substring i 1 s) (stringLength s);
      bs = chars b;
      n = builtins.length bs;
      least = x: y: if x < y then x else y;
      row = prev: c: builtins.foldl'
        (cur: j: cur ++ [ (least (least (builtins.elemAt prev (j + 1) + 1) (builtins.elemAt cur j + 1)) (builtins.elemAt prev j + (if c == builtins.elemAt bs j then 0 else 1))) ])
        [ (builtins.head prev + 1) ]
        (builtins.genList (j: j) n);
    in
    builtins.elemAt (builtins.foldl' row (builtins.genList (j: j) (n + 1)) (chars a)) n;

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
  present = v: props (_: [ true ]) v != [ ];

  # props f v: f of each value that v stands for once mkIf (a false one
  # stands for none), mkMerge, mkOverride and mkOrder are taken off,
  # concatenated.
  props = f: v:
    let type = if isAttrs v then v._type or null else null; in
    if type == "if" then (if v.condition then props f v.content else [ ])
    else if type == "merge" then concatMap (props f) v.contents
    else if type == "override" || type == "order" then props f v.content
    else f v;

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
  setsTrue = v: elem true (props (w: [ w ]) v);

  # ownK8sPod files base: the node's own k8s-pod modules, other than the
  # k8s-pod module of files (and the modules it imports): a host that
  # imports k8s-pod.nix without --k8s-pod-module, or a different copy of it.
  # Such a module puts the node on k8s-pod.nix (a definition of
  # fediversity.k8sPod.enable = true), and it or a module it imports puts a
  # condition on every listed name, which makes a unit of the name. The
  # second is tested as it is: the node is extended with a name no unit has
  # in sharedUnits, and the definitions of systemd.services that then define
  # that name are the condition. null for a node that is not on k8s-pod.nix
  # by itself through such a module, or no module system: only a node with
  # a module that sets enable and is not the given one pays for the
  # extension. Else:
  #   modules: the files of the modules that set enable and make the
  #     conditions (a host's own module that sets enable, and defines its
  #     units, as a test node may, defines no such name);
  #   condition: what the condition sets on a listed name (unitLeaves), less
  #     what runs (runs): the options of a unit that FR-008 may take for the
  #     condition alone.
  ownK8sPod = files: base:
    let
      graph = base.graph or [ ];
      named = modulesBelow files graph;
      defs = base.options.fediversity.k8sPod.enable.definitionsWithLocations or [ ];
      enabling = builtins.foldl' (acc: f: if elem f acc || elem f named then acc else acc ++ [ f ]) [ ] (map (d: d.file) (filter (d: setsTrue d.value) defs));
      listedName = "podroles-fr-008-probe-of-conditions";
      extended = base.extendModules {
        modules = [ { _file = "<podroles: FR-008 conditions probe>"; config.fediversity.podRoles.sharedUnits = mkOverride 0 [ listedName ]; } ];
      };
      conditionDefs = filter (d: isAttrs d.value && d.value ? ${listedName} && present d.value.${listedName})
        (extended.options.systemd.services.definitionsWithLocations or [ ]);
      conditions = map (d: d.file) conditionDefs;
      makesConditions = f: builtins.any (g: elem g conditions) (modulesBelow [ f ] graph);
      leaves = concatMap (d: unitLeaves d.value.${listedName}) conditionDefs;
    in
    if !(isModuleSystem base) || !((configOf "" base).fediversity.k8sPod.enable or false) || enabling == [ ] then null
    else {
      modules = filter makesConditions enabling;
      condition = builtins.foldl' (acc: l: if elem l acc || runs l || l == moduleLeaf then acc else acc ++ [ l ]) [ ] leaves;
    };

  # unitLeaves v: what a definition of one unit sets, down to the entries
  # of its attribute sets ("unitConfig.ConditionPathExists", "script"). A
  # definition that is no attribute set (a module's function) is
  # moduleLeaf, which no condition is taken to set.
  moduleLeaf = "<module>";
  unitLeaves = props (u:
    if !(isAttrs u) then [ moduleLeaf ]
    else concatMap
      (n: props (w: if isAttrs w && !(w ? _type) && !(w ? outPath) && (w.type or null) != "derivation" then map (m: "${n}.${m}") (attrNames w) else [ n ]) u.${n})
      (attrNames u));

  # runs leaf: whether a unit's setting runs a program as the unit's own
  # work: its scripts, or a command of its [Service] that starts, stops or
  # reloads it.
  runs = leaf: elem leaf [
    "script" "preStart" "postStart" "preStop" "postStop" "reload"
    "serviceConfig.ExecStart" "serviceConfig.ExecStartPre" "serviceConfig.ExecStartPost"
    "serviceConfig.ExecStop" "serviceConfig.ExecStopPost" "serviceConfig.ExecReload"
  ];

  # listedNames config: the names in the lists, each once, in the order of
  # the lists.
  listedNames = config:
    let
      podRoles = config.fediversity.podRoles or { };
      listed = concatMap (r: r.units or [ ]) (builtins.attrValues (podRoles.roles or { })) ++ podRoles.mainUnits or [ ] ++ podRoles.sharedUnits or [ ];
    in
    map (e: e.key) (builtins.genericClosure { startSet = map (key: { inherit key; }) (filter isString listed); operator = _: [ ]; });

  # byDefinitions own base: the listed names that are units of the node, by
  # what their definitions (from every file, after mkIf, mkMerge,
  # mkOverride and mkOrder) set:
  #   conditionOnly: every definition sets only what own's condition sets,
  #     as k8s-pod.nix does for every listed name, and nothing that runs:
  #     the name is no unit of the node (FR-008), only a condition on it;
  #   running: a definition sets something that runs: a unit of the node.
  # Both empty without own (see ownK8sPod).
  byDefinitions = own: base:
    let
      config = configOf "" base;
      units = config.systemd.services or { };
      names = filter (u: units ? ${u}) (listedNames config);
      values = builtins.zipAttrsWith (_: vs: vs)
        (filter isAttrs (map (d: d.value) (base.options.systemd.services.definitionsWithLocations or [ ])));
      leavesOf = u: map unitLeaves (filter present (values.${u} or [ ]));
      conditionOnly = u: let ls = leavesOf u; in ls != [ ] && builtins.all (builtins.all (l: elem l own.condition)) ls;
      running = u: builtins.any (builtins.any runs) (leavesOf u);
    in
    if own == null || own.condition == [ ] then { conditionOnly = [ ]; running = [ ]; }
    else { conditionOnly = filter conditionOnly names; running = filter running names; };

  # unjudged modules base sourceRoot decided: for each module of
  # ownK8sPod, its file (in the checkout, for a flake) and the names in the
  # lists that are units only through it (no file outside it, and outside
  # the modules it imports, defines them) and that its definitions do not
  # decide (byDefinitions: neither the condition alone nor a unit that
  # runs). Its conditions make a unit of a misspelled name: FR-008 could not
  # judge these names before it. A module that hides no name is left out.
  unjudged = modules: base: sourceRoot: decided:
    let
      config = configOf "" base;
      listed = listedNames config;
      units = config.systemd.services or { };
      shown = f:
        if sourceRoot == null || sourceRoot.checkout == "" || !hasPrefix (sourceRoot.storeRoot + "/") f then f
        else sourceRoot.checkout + substring (stringLength sourceRoot.storeRoot) (stringLength f) f;
      of = f:
        let
          outside = definedOutside (modulesBelow [ f ] (base.graph or [ ])) base;
          only = filter (u: units ? ${u} && !(outside ? ${u}) && !(elem u decided.conditionOnly) && !(elem u decided.running)) listed;
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
  # that nix then stops with. On a node that a module of its own, other
  # than the given one, puts on k8s-pod.nix (ownK8sPod), the listed names
  # whose every definition is only that module's condition are named in the
  # facts (k8sPod.conditionOnlyUnits, with what the condition sets), and the
  # modules with the names in the lists that are units only through them
  # and that their definitions do not decide (k8sPod.hostModules);
  # sourceRoot ({ checkout, storeRoot } of a flake) writes their files as
  # the checkout's. With locate (locate.nix's definitions), the facts carry
  # the definitions that any finding on the node could ask about
  # (locatedQueries), for a check of facts, which has no nix to ask.
  systemFacts = { describe, name, source, k8sPod ? given, sourceRoot ? null, extra ? { }, onProbeFailed ? _: v: v, locate ? null }: system:
    let
      base = checked describe system;
      module = importedAs base k8sPod;
      moduleFiles = if module == null then [ ] else module.files;
      probe = probeLists moduleFiles base;
      skipK8sPod = module != null && probeFailed probe;
      onPod = if skipK8sPod then base else onK8sPod { inherit describe; k8sPod = module; } base;
      config = configOf describe onPod;
      added = if module == null || skipK8sPod then null else addedUnits moduleFiles base onPod;
      own = ownK8sPod moduleFiles base;
      decided = byDefinitions own base;
      hidden = if own == null then [ ] else unjudged own.modules base sourceRoot decided;
      probeFacts = if probe == null then { } else { listsProbe = probe // (if skipK8sPod then { k8sPodModuleSkipped = true; } else { }); };
      k8sPodFacts = (if added == null then { } else { addedUnits = added; })
        // (if hidden == [ ] then { } else { hostModules = hidden; })
        // (if decided.conditionOnly == [ ] then { } else { conditionOnlyUnits = decided.conditionOnly; condition = own.condition; });
      addedFacts = if k8sPodFacts == { } then { } else { k8sPod = (facts config).k8sPod // k8sPodFacts; };
      # Every build of the node evaluates its hostName, so that conflicting
      # definitions of it fail nixos-rebuild: they fail the node here too,
      # though a flake's node is named by its attribute.
      hostName = (configOf describe base).networking.hostName or null;
      located = entry:
        let
          queries = locatedQueries entry;
          defs = locate onPod (if module == null || skipK8sPod then [ ] else map toString module.files) queries;
          entries = builtins.genList (i: builtins.elemAt queries i // { defs = builtins.elemAt defs i; }) (builtins.length queries);
        in
        if locate == null || queries == [ ] then entry else entry // { definitions = builtins.deepSeq entries entries; };
    in
    builtins.seq hostName ((if probeFailed probe then onProbeFailed (listsFailingProbe probe) else (v: v))
      (located (nodeFacts describe ({ inherit name source; } // extra // probeFacts // addedFacts) config)));

  # locatedQueries entry: every query of locate.nix that a finding on the
  # node could ask (checks/locate.go), worked out from the facts alone: a
  # check of facts has no nix to ask afterwards. What a node's size would
  # multiply is asked only where a finding is possible: of the names in
  # the lists, a name that is no unit, or that lists name more than once,
  # or that a rule names (a shared unit, a modular service, lldap-provision,
  # a name a host's own k8s-pod module hides); on k8s-pod.nix with a
  # requested role of the node's image, each enabled unit in no list and
  # not the platform's (PR103). The rest is bounded by the roles: every
  # setting of fediversity (roles, secrets, ports, the variables of the
  # services' images, lldap, authelia), the values that are no data, the
  # node's name and the modular services.
  locatedQueries = entry:
    let
      names = v: if builtins.isList v then filter isString v else [ ];
      attrs = v: if isAttrs v then v else { };
      set = l: listToAttrs (map (name: { inherit name; value = null; }) l);
      roles = attrs (attrs entry.podRoles).roles;
      lists = map (r: { path = [ "fediversity" "podRoles" "roles" r "units" ]; names = names (attrs roles.${r}).units or [ ]; }) (attrNames roles)
        ++ [
          { path = [ "fediversity" "podRoles" "mainUnits" ]; names = names entry.podRoles.mainUnits; }
          { path = [ "fediversity" "podRoles" "sharedUnits" ]; names = names entry.podRoles.sharedUnits; }
        ];
      units = attrs entry.units;
      k8s = attrs entry.k8sPod;
      services = names (entry.modularServices or [ ]);
      notUnits = set (names (k8s.addedUnits or [ ]) ++ names (k8s.conditionOnlyUnits or [ ]));
      occurrences = builtins.groupBy (u: u) (concatMap (l: l.names) lists);
      named = set (names entry.podRoles.sharedUnits ++ services ++ [ "lldap-provision" ]
        ++ concatMap (m: names (attrs m).units or [ ]) (k8s.hostModules or [ ]));
      wrong = u: !(units ? ${u}) || notUnits ? ${u} || builtins.length occurrences.${u} > 1 || named ? ${u};
      once = l: attrNames (set l);
      nodeImageRole = builtins.any (r: isAttrs r && (r.replicas or null) != null && (r.service or null) == null) (builtins.attrValues roles);
      platform = names (k8s.platformUnits or [ ]);
      unlisted = filter (u: (attrs units.${u}).enable or true == true && !(occurrences ? ${u}) && !(elem u platform)) (attrNames units);

      # Each attribute path of v below prefix, to depth levels.
      every = prefix: depth: v:
        [ { path = prefix; } ]
        ++ (if depth > 0 && isAttrs v then concatMap (n: every (prefix ++ [ n ]) (depth - 1) v.${n}) (attrNames v) else [ ]);
      ports = concatMap
        (r: map (p: { path = [ "fediversity" "podRoles" "roles" r "ports" ]; port = { port = p.port or null; protocol = p.protocol or "TCP"; }; })
          (filter isAttrs (let ps = (attrs roles.${r}).ports or [ ]; in if builtins.isList ps then ps else [ ])))
        (attrNames roles);
      # A value that is no data is named down to its last attribute.
      strings = path: if path == [ ] || !(isString (builtins.head path)) then [ ] else [ (builtins.head path) ] ++ strings (builtins.tail path);
      notData = map (d: { path = strings ((attrs d).path or [ ]); }) (if builtins.isList (entry.notData or null) then entry.notData else [ ]);
      unitsOf = s: [ { path = [ "systemd" "services" s "enable" ]; } { path = [ "systemd" "services" s ]; } ];
      # Each variable of a modular service's image, which the facts hold
      # by name (a list), below the depth of every.
      serviceSettings = attrs (attrs entry.podRoles).services or { };
      variables = concatMap
        (s: map (v: { path = [ "fediversity" "podRoles" "services" s "environment" v ]; }) (names (attrs serviceSettings.${s}).environment or [ ]))
        (attrNames serviceSettings);
    in
    concatMap (l: map (u: { inherit (l) path; holds = u; }) (once (filter wrong l.names))) lists
    ++ (if (k8s.enable or false) == true && nodeImageRole then map (u: { path = [ "systemd" "services" u ]; }) unlisted else [ ])
    ++ every [ "fediversity" "podRoles" ] 5 entry.podRoles
    ++ variables
    ++ ports
    ++ every [ "fediversity" "lldap" ] 2 (entry.lldap or { })
    ++ every [ "fediversity" "authelia" ] 3 (entry.authelia or { })
    ++ [ { path = [ "fediversity" "k8sPod" "enable" ]; } { path = [ "networking" "hostName" ]; } { path = [ "systemd" "stateMigrations" "lldap" ]; } ]
    ++ filter (q: q.path != [ ]) notData
    ++ concatMap (s: unitsOf s ++ [ { path = [ "system" "services" s ]; } ]) services
    ++ (if units ? lldap-provision then unitsOf "lldap-provision" else [ ]);
}
