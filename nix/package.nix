# The podroles binary: static, version stamped.
{ buildGoModule, version, src }:
buildGoModule {
  pname = "podroles";
  inherit version src;
  # `go mod vendor` of go.mod; flaketest checks it against go.mod.
  vendorHash = "sha256-A8ESJZJm+cnvhjViWyNUweg1nQQbPNgokc1pEvzrvAw=";
  subPackages = [ "cmd/podroles" ];
  env.CGO_ENABLED = 0;
  ldflags = [ "-s" "-w" "-X main.version=${version}" ];
  # The tests need nix in the sandbox: checks.tests runs them.
  doCheck = false;
  meta.mainProgram = "podroles";
}
