# The facts of one node: its config projected onto the node surface
# (shared/spec/node-surface.md), with the defaults of that file.
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
  inherit (builtins) attrNames isAttrs isList isPath mapAttrs;

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

  secret = ifAttrs (s: {
    path = s.path or null;
    field = s.field or null;
    encoding = s.encoding or null;
    variable = s.variable or null;
    template = s.template or null;
    parameters = nullOr plain (s.parameters or null);
    restart = s.restart or false;
  });

  port = ifAttrs (p: {
    port = p.port or null;
    protocol = p.protocol or "TCP";
  });

  metrics = ifAttrs (m: {
    port = m.port or null;
    path = m.path or "/metrics";
  });

  role = ifAttrs (r: {
    replicas = r.replicas or null;
    units = r.units or [ ];
    service = r.service or null;
    secrets = eachAttr secret (r.secrets or { });
    ports = eachItem port (r.ports or [ ]);
    metrics = nullOr metrics (r.metrics or null);
    companion = r.companion or false;
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
    companion = nullOr pathString (s.companion or null);
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
    mainUnits = podRoles.mainUnits or [ ];
    sharedUnits = podRoles.sharedUnits or [ ];
    services = eachAttr service (podRoles.services or { });
  };

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
