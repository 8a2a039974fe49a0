# The part of nixpkgs' lib that nix/module.nix calls, for tests: options
# return their declaration and mkIf its condition and content.
{
  mkOption = decl: decl;
  mkIf = condition: content: { _type = "if"; inherit condition content; };
  types.bool = "bool";
}
