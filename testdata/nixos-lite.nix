# A stand-in for nixpkgs' lib.nixosSystem, as small as podroles' tests need:
# this machine has no nixpkgs. It takes modules (attribute sets, functions
# of { config, ... } or paths to either, with imports), merges their
# definitions (attribute sets merge, lists concatenate, anything else the
# later one wins) and returns what podroles reads of a NixOS system: config
# and extendModules. It has no options, types, priorities or mkIf.
let
  inherit (builtins) isAttrs isFunction isList isPath isString mapAttrs foldl' concatMap;

  load = m: if isPath m || isString m then load (import m) else m;

  merge = a: b:
    if isAttrs a && isAttrs b then a // mapAttrs (n: v: if a ? ${n} then merge a.${n} v else v) b
    else if isList a && isList b then a ++ b
    else b;

  nixosSystem = { modules }:
    let
      given = modules;
      apply = m: let m' = load m; in if isFunction m' then m' { inherit config; } else m';
      # Flattens imports; a module's imports may not depend on config.
      flatten = m: let body = apply m; in [ (removeAttrs body [ "imports" ]) ] ++ concatMap flatten (body.imports or [ ]);
      config = foldl' merge { } (concatMap flatten modules);
    in
    {
      inherit config;
      extendModules = { modules ? [ ] }: nixosSystem { modules = given ++ modules; };
    };
in
{
  inherit nixosSystem;
}
