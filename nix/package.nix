# The podroles binary: static, version stamped.
{ buildGoModule, version, src }:
buildGoModule {
  pname = "podroles";
  inherit version src;
  # `go mod vendor` of go.mod; flaketest checks it against go.mod.
  vendorHash = "sha256-R7RsQxKoFWQnC7Iv3+xx2zmODHLz6VqWDQAzaFhPgrM=";
  subPackages = [ "cmd/podroles" ];
  env.CGO_ENABLED = 0;
  ldflags = [ "-s" "-w" "-X main.version=${version}" ];
  # The tests need nix in the sandbox: checks.tests runs them.
  doCheck = false;
  meta.mainProgram = "podroles";
}
