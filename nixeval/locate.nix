# Where a node defines the options that findings are about: podroles'
# second, lazy pass. podroles runs it only for the nodes that have findings,
# and it forces only the definitions of the options it is asked about, so a
# clean node costs nothing more than its extraction.
#
# request (request.json beside this file): sources and k8sPodModule, as
# extract.nix takes them. A worker (serve.nix) asks
#   answer { source = I; attr = "node" or null; onK8sPod; readModules; queries = [ QUERY ... ]; }
# for one node at a time.
# QUERY = {
#   path = [ "fediversity" "podRoles" "roles" "worker" "units" ];
#   holds = "unit" or null;                    # the definitions whose list holds it
#   port = { port = 443; protocol = "TCP"; } or null;  # the entry of a list of ports
# };
#
# The answer for a node is
#   { root = the store path of a flake's source, or null; queries = [ [ DEF ... ] ... ]; }
# DEF = { file; line; column; priority; lost; ofNixOS; }: line and column
# are null where nix knows only the file; priority is that of mkOverride (100
# for a plain definition); lost is true for a definition whose priority lost;
# ofNixOS is true for a definition in NixOS's own modules (modulesPath).
#
# How nix knows where: a module-system node's options.<path> has
# definitionsWithLocations, the file of each definition that won; below the
# option (a role's units under the option roles), the definition's value is
# the attribute set the module wrote, and builtins.unsafeGetAttrPos gives the
# line and column of each name in it once mkIf, mkMerge, mkOverride and
# mkOrder are taken off. An option's own name (mainUnits) is in no value
# that options keep: for it, the modules are read again as the module system
# read them (the system's type lists them; NixOS systems carry the lib to
# call them with), which also finds the definitions that lost to a higher
# priority. A plain attribute-set node has no options: unsafeGetAttrPos on
# its config directly.
request:
let
  inherit (builtins)
    all attrNames concatMap dirOf elem elemAt filter foldl' functionArgs genList
    genericClosure head isAttrs isFunction isList isPath isString length
    mapAttrs removeAttrs seq substring stringLength tail tryEval unsafeGetAttrPos;

  node = import ./node.nix { k8sPodModule = request.k8sPodModule or null; k8sPodModuleAliases = request.k8sPodModuleAliases or [ ]; };

  # Each flake once per worker, as extract.nix keeps them.
  flakes = map (s: if s.kind == "flake" then builtins.getFlake (s.read or s.ref) else null) request.sources;

  imap1 = f: list: genList (i: f (i + 1) (elemAt list i)) (length list);
  take = n: list: genList (elemAt list) n;
  drop = n: list: genList (i: elemAt list (i + n)) (length list - n);
  hasPrefix = prefix: s: substring 0 (stringLength prefix) s == prefix;
  # A module without a file of its own is "<unknown-file>", no path.
  isAbsolute = hasPrefix "/";
  min = a: b: if a < b then a else b;
  deepSeq' = v: builtins.deepSeq v v;
  orElse = fallback: v: let r = tryEval (deepSeq' v); in if r.success then r.value else fallback;

  # A candidate definition while a path is followed:
  #   file: the file of the definition; value: its value at this level;
  #   priority: its mkOverride priority, null for none (100);
  #   lost: it lost to a higher priority at some level;
  #   pos: the position of the nearest name on the way that nix knows in
  #     this definition's file, or null;
  #   conds: the conditions of the mkIfs on the way, not yet evaluated.
  priorityOf = c: if c.priority == null then 100 else c.priority;

  # unwrap c v: the candidates that value v stands for once the module
  # system's properties are taken off. The outermost mkOverride wins, as
  # it does when the module system pushes properties down.
  unwrap = c: v:
    if isAttrs v && v ? _type then
      if v._type == "if" then unwrap (c // { conds = c.conds ++ [ v.condition ]; }) v.content
      else if v._type == "merge" then concatMap (unwrap c) v.contents
      else if v._type == "override" then unwrap (c // { priority = if c.priority == null then v.priority else c.priority; }) v.content
      else if v._type == "order" then unwrap c v.content
      else if v._type == "definition" then unwrap (c // { file = toString v.file; }) v.value
      else [ (c // { value = v; }) ]
    else [ (c // { value = v; }) ];

  # settle cands: what the module system does with the definitions of one
  # option or one attribute of a merged value: those under a false mkIf
  # drop out, and those below the highest priority lose.
  settle = cands:
    let
      live = filter (c: all (x: x) c.conds) cands;
      best = foldl' (p: c: if c.lost then p else min p (priorityOf c)) 9999 live;
    in
    map (c: c // { lost = c.lost || priorityOf c > best; conds = [ ]; }) live;

  # follow ctx cands path settleFrom: follows path into each candidate's
  # value. From step settleFrom on (the option's own level and below it,
  # where the module system merges), each step settles; below the option,
  # each name's definitions have priorities of their own.
  follow = ctx: cands: path: settleFrom: optionDepth:
    let
      go = depth: cs: p:
        if p == [ ] then cs
        else
          let
            name = head p;
            below = depth > optionDepth;
            step = c:
              if isAttrs c.value && c.value ? ${name} then
                unwrap (c // { pos = ctx.better c (unsafeGetAttrPos name c.value); } // (if below then { priority = null; } else { })) c.value.${name}
              else [ ];
            next = concatMap step cs;
          in
          go (depth + 1) (if depth >= settleFrom then settle next else next) (tail p);
    in
    go 1 cands path;

  # The context of one node: which positions count, and how its modules
  # are read again.
  contextOf = system: k8sPodFiles: readModules:
    let
      # The folder of nixpkgs' lib: where the module system declared
      # _module.args.
      libDir =
        let decl = system.options._module.args.declarationPositions or [ ];
        in if decl == [ ] then null else dirOf (head decl).file;
      lib = system.lib or system._module.specialArgs.lib or system._module.args.lib or (if libDir == null then null else import libDir);
    in
    rec {
      # A position counts when it is in the definition's own file (or the
      # default.nix of its folder), or in another file that is not nixpkgs'
      # lib: lib.nameValuePair and its kin make names whose position is
      # lib's, which says nothing of where the user defined them, whether
      # the definition has a file of its own or not (a module written in
      # the list of nixosSystem's modules).
      better = c: p:
        if p != null && (p.file == c.file || p.file == c.file + "/default.nix" || libDir == null || !hasPrefix (libDir + "/") p.file) then p else c.pos;

      special = system._module.specialArgs or { };
      given = {
        lib = if lib == null then throw "podroles: the node carries no lib to read its modules with" else lib;
        config = system.config // { _module = system._module or { }; };
        options = system.options;
        specialArgs = special;
        _class = system.class or null;
        _prefix = [ ];
      } // special;
      argOf = name: given.${name} or system._module.args.${name} or (throw "podroles: no module argument ${name}");
      apply = f: f (given // mapAttrs (name: _: argOf name) (functionArgs f));

      # load and unify follow collectModules and unifyModuleSyntax of
      # nixpkgs' lib/modules.nix.
      load = file: key: m:
        if isFunction m then load file key (apply m)
        else if isAttrs m && (m._type or "module") == "module" then unify file key m
        else if isAttrs m && (m._type == "if" || m._type == "override") then unify file key { config = m; }
        else if isPath m || isString m then load (toString m) (toString m) (import m)
        else unify file key { };
      unify = file: key: m: {
        file = toString (m._file or file);
        key = toString (m.key or key);
        imports = (m.require or [ ]) ++ (m.imports or [ ]);
        disabled = m.disabledModules or [ ];
        config =
          if m ? config || m ? options then m.config or { }
          else removeAttrs m [ "_class" "_file" "key" "disabledModules" "require" "imports" "freeformType" "meta" ];
      };

      # Every module of the system once, by key, less the disabled ones.
      modules =
        let
          entry = parentFile: parentKey: n: m: load parentFile "${parentKey}:anon-${toString n}" m;
          every = genericClosure {
            startSet = imap1 (entry "<unknown-file>" "") system.type.getSubModules;
            operator = u: imap1 (entry u.file u.key) u.imports;
          };
          modulesPath = toString (special.modulesPath or "");
          keyOf = d:
            if isString d then (if substring 0 1 d == "/" then d else modulesPath + "/" + d)
            else if isAttrs d && d ? key && !(d ? outPath) then d.key
            else toString d;
          disabled = concatMap (u: map keyOf u.disabled) every;
        in
        filter (u: !(elem u.key disabled)) every;

      # The definitions of the option at prefix as the modules wrote them,
      # lost ones included, each with the position of the option's name.
      # A system made by hand (the node module's, a plain config's) may
      # lack what the modules are read again with.
      readable = readModules && lib != null && isAttrs (system.type or null) && system.type ? getSubModules;
      raw = prefix:
        if !readable then [ ]
        else follow ctx
          (concatMap (u: unwrap { inherit (u) file; priority = null; lost = false; pos = null; conds = [ ]; } u.config) modules)
          prefix (length prefix) (length prefix);
      ctx = { inherit better ofNixOS; };

      # A file of NixOS's own modules (under modulesPath): a unit that only
      # NixOS defines (the unit of a modular service) is fixed in the host,
      # not there.
      nixosDir = toString (special.modulesPath or "");
      ofNixOS = file: nixosDir != "" && isString file && hasPrefix (nixosDir + "/") file;

      # The k8s-pod module's definitions come after the node's own: of a
      # unit that both define, the node's module is where to fix it.
      nodeFirst = cands: filter (c: !(elem c.file k8sPodFiles)) cands ++ filter (c: elem c.file k8sPodFiles) cands;
    };

  # optionAt options path: the length of the path's prefix that names an
  # option, or 0.
  optionDepth = options: path:
    let
      go = o: p: n:
        if isAttrs o && (o._type or null) == "option" then n
        else if p == [ ] || !(isAttrs o) || !(o ? ${head p}) then 0
        else go o.${head p} (tail p) (n + 1);
    in
    go options path 0;

  holding = q: c: (q.holds or null) == null || (isList c.value && elem q.holds c.value);

  # portPos q c: the position of the entry of c's list of ports that q
  # names, or null.
  portEntries = q: c:
    if (q.port or null) == null || !(isList c.value) then [ ]
    else filter (e: isAttrs e.value && (e.value.port or null) == q.port.port && (e.value.protocol or "TCP") == q.port.protocol)
      (concatMap (v: filter (e: all (x: x) e.conds) (unwrap (c // { conds = [ ]; }) v)) c.value);

  # pick q cands: the candidates a query is about: those whose list holds
  # the name or the port, when any does, else all of them.
  pick = q: cands:
    let
      wanted = filter (c: holding q c && ((q.port or null) == null || portEntries q c != [ ])) cands;
    in
    if wanted == [ ] then cands else wanted;

  show = ctx: q: c:
    let
      entry = portEntries q c;
      pos = if entry == [ ] then c.pos else ctx.better c (unsafeGetAttrPos "port" (head entry).value);
    in
    if pos == null && c.file == null then [ ]
    else [{
      file = if pos != null then pos.file else if isAbsolute c.file && builtins.pathExists (c.file + "/default.nix") then c.file + "/default.nix" else c.file;
      line = if pos == null then null else pos.line;
      column = if pos == null then null else pos.column;
      priority = priorityOf c;
      inherit (c) lost;
      ofNixOS = ctx.ofNixOS or (_: false) (if pos != null then pos.file else c.file);
    }];

  # The definitions of a plain attribute-set node: no options, no
  # priorities, positions as the file wrote them.
  plainDefs = config: q:
    let
      ctx = { better = c: p: if p != null then p else c.pos; };
      found = follow ctx [ { file = null; value = config; priority = null; lost = false; pos = null; conds = [ ]; } ] q.path 999999 999999;
    in
    concatMap (show ctx q) (pick q found);

  # The definitions of a module-system node; ctx is contextOf system,
  # shared by the node's queries.
  moduleDefs = system: ctx: q:
    let
      depth = optionDepth system.options q.path;
      prefix = take depth q.path;
      rest = drop depth q.path;
      option = foldl' (o: name: o.${name}) system.options prefix;
      rawTop = ctx.raw prefix;

      # A winning definition of the option itself has no position in its
      # value: take the option's name in the same file, as the module
      # wrote it. Below the option, a file may define it more than once
      # (the blocks of a mkMerge): the k-th of its definitions that holds
      # the name is the k-th block that holds it, not the first block.
      holdsName = v: rest != [ ] && isAttrs v && v ? ${head rest};
      positioned = k: d:
        let
          same = filter (r: r.file == d.file && !r.lost && (rest != [ ] || holding q r)) rawTop;
          mine = if same != [ ] then same else filter (r: r.file == d.file && !r.lost) rawTop;
          holders = filter (r: holdsName r.value) mine;
        in
        if mine == [ ] then null
        else if holders == [ ] then (head mine).pos
        else (elemAt holders (if k < length holders then k else 0)).pos;
      # The module system counts an option's default as a definition (at
      # mkOptionDefault's priority, 1500, in the file that declares it): an
      # option the node left at its default has no definition to fix, and
      # the finding points at the next reference (the role, ...).
      declaredIn = map toString (option.declarations or [ ]);
      isDefault = d: option.highestPrio >= 1500 && declaredIn != [ ] && toString d.file == head declaredIn;
      defs = filter (d: !(isDefault d)) option.definitionsWithLocations;
      # k: how many definitions of the same file before d hold the name.
      before = i: d: length (filter (e: e.file == d.file && holdsName e.value) (take i defs));
      top = genList
        (i: let d = elemAt defs i; in { inherit (d) file value; priority = option.highestPrio; lost = false; pos = positioned (before i d) d; conds = [ ]; })
        (length defs);
      followed = follow ctx top rest 1 0;
      won = pick q (filter (c: !c.lost) followed);
      # Below the option, the definitions that lost are in the values of
      # those that won; of the option itself, only the modules know them.
      lostBelow = filter (c: c.lost) followed;
      lostTop = if rest != [ ] then [ ] else filter (r: r.lost) rawTop;
      withoutPositions = map (d: d // { pos = null; }) top;
    in
    if depth == 0 then plainDefs system.config q
    else
      orElse
        (orElse [ ] (concatMap (show ctx q) (pick q (follow ctx withoutPositions rest 1 0))))
        (concatMap (show ctx q) (ctx.nodeFirst won ++ lostBelow ++ lostTop));

  defsOf = system: k8sPodFiles: readModules:
    if isAttrs system && system ? options && system ? config then moduleDefs system (contextOf system k8sPodFiles readModules)
    else plainDefs (node.configOf "node" system);

  # The node as extract.nix read it: extended with the k8s-pod module when
  # podroles says extraction did (not when the FR-007 probe kept it off).
  answer = n:
    let
      s = elemAt request.sources n.source;
      flake = elemAt flakes n.source;
      root = toString (flake.sourceInfo.outPath or flake.outPath);
      describe = if s.kind == "flake" then "nixosConfigurations.${n.attr}" else s.display;
      base = node.checked describe (if s.kind == "flake" then flake.nixosConfigurations.${n.attr} else import (/. + s.path));
      k8sPod = node.importedAs base (if s.kind == "flake" then node.k8sPodIn { checkout = s.checkout or ""; storeRoot = root; } else node.k8sPodIn { checkout = ""; storeRoot = ""; });
      onPod = (n.onK8sPod or false) && k8sPod != null;
      system = if onPod then node.onK8sPod { inherit describe k8sPod; } base else base;
    in
    {
      root = if s.kind == "flake" then root else null;
      queries = map (defsOf system (if onPod then map toString k8sPod.files else [ ]) (n.readModules or true)) n.queries;
    };
in
{
  inherit answer;

  # definitions system k8sPodFiles queries: the definitions of each query
  # (a QUERY as above) in a system read in this evaluation, for the facts
  # that lib.mkCheck and the node module write (node.nix). The modules are
  # read again as for podroles check: for an option's own name, only down
  # to the option, which the module system forced to merge it.
  definitions = system: k8sPodFiles: map (defsOf system k8sPodFiles true);
}
