# A podroles binary, static and version stamped: podroles, with every
# command, or podroles-check, with the checker's commands alone (check,
# facts, rules), which is what builds run.
{ buildGoModule, version, src, pname ? "podroles" }:
buildGoModule {
  inherit pname version src;
  # `go mod vendor` of go.mod; flaketest checks it against go.mod.
  vendorHash = "sha256-nxqNfV5r4snp20/6BEO37JK+dkZVxZ2gpdPTIpIDgSQ=";
  subPackages = [ "cmd/${pname}" ];
  env.CGO_ENABLED = 0;
  ldflags = [ "-s" "-w" "-X main.version=${version}" ];
  # The tests need nix in the sandbox: checks.tests runs them.
  doCheck = false;
  meta.mainProgram = pname;
}
