# nixpkgs' lib, unmodified, from outside the repository: PODROLES_NIXPKGS_LIB
# when set (the tests set it), else ../shared/nixpkgs-lib/lib beside the
# repository, where every developer and CI have it. Never copied in here.
let
  fromEnv = builtins.getEnv "PODROLES_NIXPKGS_LIB";
  beside = ../../../../shared/nixpkgs-lib/lib;
in
if fromEnv != "" then import (/. + fromEnv)
else if builtins.pathExists beside then import beside
else throw "testdata/modules needs nixpkgs' lib: set PODROLES_NIXPKGS_LIB to its folder, or put it at ../shared/nixpkgs-lib/lib beside the repository"
