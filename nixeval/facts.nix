# The facts of one node: its config projected onto the node surface
# (docs/node-surface.md), with the defaults of that contract.
#
# A function from a node's `config` (a NixOS config, or any attribute set of
# the same shape) to an attribute set that `builtins.toJSON` or
# `nix eval --json` prints as one node of the facts document, less its name
# and source. It is embedded in the podroles binary and is the flake's
# `lib.facts`, so both read nodes the same way.
#
# Builtins only, so that it works on any config without nixpkgs. Only the
# fields below are forced: never a unit's script, a package or a derivation.
# Values are passed on as the node gives them; podroles checks their types
# and names the option of any that is wrong.
config:
let
  inherit (builtins) attrNames concatLists concatMap elemAt genList isAttrs isFunction isList isPath isString length mapAttrs;

  nullOr = f: v: if v == null then null else f v;

  # A path literal (caFile = ./ca.pem) becomes its path string; toString on
  # a path does not copy it to the store. A derivation (a NixOS path option
  # may hold one) becomes a marker in the store: the rules need to know only
  # that it is set and where, and forcing it would instantiate it.
  pathString = v:
    if isPath v then toString v
    else if isAttrs v && ((v.type or null) == "derivation" || v ? outPath) then "/nix/store/<derivation>"
    else v;

  # Parameters of a secret's request: plain values are passed on, anything
  # else (a derivation, a function) would need forcing or building and
  # becomes null.
  plain = v:
    if isPath v then toString v
    else if isList v then map plain v
    else if isAttrs v then (if (v.type or null) == "derivation" then null else mapAttrs (_: plain) v)
    else if builtins.isFunction v then null
    else v;

  # FR-002: a request holds only data. notDataKind v says why a value is
  # none, or null: a function; a path literal, which nix copies to the store
  # when it is written out; a derivation, which would be built; a string
  # that refers to the store (a package's or a copied file's path), which
  # would be built or copied too. Only the value itself is forced, to its
  # head: never a derivation's outPath, never a path's file.
  notDataKind = v:
    if isFunction v then "function"
    else if isPath v then "path"
    else if isAttrs v && (v.type or null) == "derivation" then "derivation"
    else if isString v && builtins.hasContext v then "store path"
    else null;

  # data v: the value as the facts carry it, so that writing them out
  # copies and builds nothing: a path as its path string, a string without
  # its store context, a function or a derivation as null. notData names
  # each such value.
  data = v:
    let kind = notDataKind v; in
    if kind == null then v
    else if kind == "path" then toString v
    else if kind == "store path" then builtins.unsafeDiscardStringContext v
    else null;

  # notDataIn shape path v: every value of v that is no data, with its
  # option path, where shape describes the settings of the node surface:
  # "leaf" a value, "deep" any value (parameters), { listOf = shape; },
  # { attrsOf = shape; } or an attribute set of shapes by name.
  notDataIn = shape: path: v:
    let kind = notDataKind v; in
    if kind != null then [ { inherit path kind; } ]
    else if shape == "leaf" then [ ]
    else if shape == "deep" then
      (if isList v then concatLists (genList (i: notDataIn "deep" (path ++ [ i ]) (elemAt v i)) (length v))
       else if isAttrs v then concatMap (n: notDataIn "deep" (path ++ [ n ]) v.${n}) (attrNames v)
       else [ ])
    else if shape ? listOf then
      (if isList v then concatLists (genList (i: notDataIn shape.listOf (path ++ [ i ]) (elemAt v i)) (length v)) else [ ])
    else if shape ? attrsOf then
      (if isAttrs v then concatMap (n: notDataIn shape.attrsOf (path ++ [ n ]) v.${n}) (attrNames v) else [ ])
    else if isAttrs v then concatMap (n: if v ? ${n} then notDataIn shape.${n} (path ++ [ n ]) v.${n} else [ ]) (attrNames shape)
    else [ ];

  roleShape = {
    replicas = "leaf";
    units.listOf = "leaf";
    service = "leaf";
    secrets.attrsOf = {
      path = "leaf";
      field = "leaf";
      encoding = "leaf";
      variable = "leaf";
      template = "leaf";
      parameters = "deep";
      restart = "leaf";
    };
    ports.listOf = { port = "leaf"; protocol = "leaf"; };
    metrics = { port = "leaf"; path = "leaf"; };
    companion = "leaf";
  };

  # Each projection applies only to a value of the right shape and passes
  # anything else on as it is, so that podroles names the option whose
  # value is wrong instead of nix failing inside this file.
  ifAttrs = f: v: if isAttrs v then f v else v;
  eachAttr = f: v: if isAttrs v then mapAttrs (_: f) v else v;
  eachItem = f: v: if isList v then map f v else v;
  names = v: if isAttrs v then attrNames v else v;

  portLists = ifAttrs (lists: {
    allowedTCPPorts = lists.allowedTCPPorts or [ ];
    allowedUDPPorts = lists.allowedUDPPorts or [ ];
    allowedTCPPortRanges = lists.allowedTCPPortRanges or [ ];
    allowedUDPPortRanges = lists.allowedUDPPortRanges or [ ];
  });

  firewall = config.networking.firewall or { };

  # A value of a role's settings that is no data comes out as data() makes
  # it; notData says which and why.
  dataAttrs = f: v: let d = data v; in if isAttrs d then f d else d;

  secret = dataAttrs (s: {
    path = data (s.path or null);
    field = data (s.field or null);
    encoding = data (s.encoding or null);
    variable = data (s.variable or null);
    template = data (s.template or null);
    parameters = nullOr plain (data (s.parameters or null));
    restart = data (s.restart or false);
  });

  port = dataAttrs (p: {
    port = data (p.port or null);
    protocol = data (p.protocol or "TCP");
  });

  metrics = dataAttrs (m: {
    port = data (m.port or null);
    path = data (m.path or "/metrics");
  });

  role = dataAttrs (r: {
    replicas = data (r.replicas or null);
    units = eachItem data (data (r.units or [ ]));
    service = data (r.service or null);
    secrets = eachAttr secret (data (r.secrets or { }));
    ports = eachItem port (data (r.ports or [ ]));
    metrics = nullOr metrics (data (r.metrics or null));
    companion = data (r.companion or false);
  });

  # The variables of a service's image with their values (FR-011: never
  # secrets). Kubernetes takes strings only: any other value becomes a
  # marker naming its type, so that podroles names the option instead of
  # nix forcing (or building) it here.
  kindOf = v:
    if isPath v then "path"
    else if builtins.isFunction v then "function"
    else if isAttrs v && (v.type or null) == "derivation" then "derivation"
    else builtins.typeOf v;
  variables = ifAttrs (mapAttrs (_: v: if builtins.isString v then v else { notAString = kindOf v; }));

  service = ifAttrs (s: {
    environment = names (s.environment or { });
    variables = variables (s.environment or { });
    companion = nullOr (v: if isString v then builtins.unsafeDiscardStringContext v else pathString v) (s.companion or null);
  });

  podRoles = config.fediversity.podRoles or { };
  lldap = config.fediversity.lldap or { };
  authelia = config.fediversity.authelia or { };
in
{
  units = eachAttr (ifAttrs (u: { enable = u.enable or true; })) (config.systemd.services or { });
  modularServices = names (config.system.services or { });
  stateMigrations = names (config.systemd.stateMigrations or { });

  firewall = portLists firewall // {
    enable = firewall.enable or true;
    interfaces = eachAttr portLists (firewall.interfaces or { });
  };

  podRoles = {
    roles = eachAttr role (podRoles.roles or { });
    mainUnits = eachItem data (podRoles.mainUnits or [ ]);
    sharedUnits = eachItem data (podRoles.sharedUnits or [ ]);
    services = eachAttr service (podRoles.services or { });
  };

  # FR-002: the values of the roles' settings, and the services' companion
  # programs that the plan carries, that are no data.
  notData =
    notDataIn { attrsOf = roleShape; } [ "fediversity" "podRoles" "roles" ] (podRoles.roles or { })
    ++ notDataIn { attrsOf.companion = "leaf"; } [ "fediversity" "podRoles" "services" ] (podRoles.services or { });

  k8sPod = {
    enable = config.fediversity.k8sPod.enable or false;
    platformUnits = config.fediversity.k8sPod.platformUnits or [ ];
  };

  lldap = {
    host = lldap.host or "localhost";
    readerBindPasswordFile = nullOr pathString (lldap.readerBindPasswordFile or null);
    tls = {
      enable = lldap.tls.enable or false;
      caFile = nullOr pathString (lldap.tls.caFile or null);
    };
  };

  authelia = {
    host = authelia.host or "localhost";
    caFile = nullOr pathString (authelia.caFile or null);
    storage = {
      local = nullOr (ifAttrs (l: { path = nullOr pathString (l.path or null); })) (authelia.storage.local or null);
      postgres = (authelia.storage.postgres or null) != null;
    };
    smtp = (authelia.smtp or null) != null;
    forwardAuth.enable = authelia.forwardAuth.enable or false;
  };
}
