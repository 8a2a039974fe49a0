# checks.<system>: the bundled examples must pass podroles check, and the
# broken one must fail it; the Go test suite runs with nix in the sandbox.
{ pkgs, mkCheck, podroles }:
let
  examples = {
    mastodon = import ../examples/mastodon.nix;
    directory = import ../examples/directory.nix;
    mastodon-vm = import ../examples/mastodon-vm.nix;
  };
in
{
  examples = mkCheck { inherit pkgs; nodes = examples; name = "podroles-examples"; };

  # The checks refuse what they must: this passes when podroles check
  # refuses the broken example.
  broken-example-refused = mkCheck {
    inherit pkgs;
    nodes.mastodon = import ../examples/broken/mastodon-renamed.nix;
    name = "podroles-broken-example-refused";
    expectRefused = true;
  };

  tests = podroles.overrideAttrs (old: {
    pname = "podroles-tests";
    doCheck = true;
    # nix for podroles check; slapd, haproxy and PostgreSQL for the local
    # environment of the scenario suites (slapd is in openldap's libexec).
    nativeCheckInputs = (old.nativeCheckInputs or [ ]) ++ (with pkgs; [ nix openldap haproxy postgresql ]);
    # nix in the sandbox: a store of its own under the build directory.
    preCheck = ''
      export PATH=$PATH:${pkgs.openldap}/libexec
      export HOME=$TMPDIR
      export NIX_REMOTE="local?root=$TMPDIR/nix-root"
      export NIX_CONFIG="sandbox = false"
    '';
  });
}
