{
  description = "podroles: check the pod roles of NixOS nodes against the pod-roles spec, in nix flake check and in every node's build";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  # The glue only: what it wires together is in plain Nix files under nix/
  # and nixeval/, which evaluate with builtins and are tested with the real
  # nix in `go test` (flaketest/).
  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
      version = self.shortRev or self.dirtyShortRev or "dev";
      podrolesFor = pkgs: pkgs.callPackage ./nix/package.nix { inherit version; src = self; };
      # The node commands alone, for the builds that check nodes.
      podrolesCheckFor = pkgs: pkgs.callPackage ./nix/package.nix { inherit version; src = self; pname = "podroles-check"; };
    in
    {
      lib = {
        # A function from a node's config to its facts: the very file the
        # binary embeds.
        facts = import ./nixeval/facts.nix;

        # mkCheck { pkgs, nodes, k8sPodModule ? null, strict ? false }: a
        # derivation that fails when podroles-check finds an error in nodes.
        mkCheck = { pkgs, ... }@args:
          import ./nix/mk-check.nix { inherit (pkgs) runCommand; podrolesCheck = podrolesCheckFor pkgs; } (removeAttrs args [ "pkgs" ]);

        # mkCheckShards { pkgs, nodes, shards, ... }: mkCheck split into
        # `shards` checks of one slice each, NAME-I-of-N, to merge into
        # checks.<system> (docs/scale.md).
        mkCheckShards = import ./nix/mk-check-shards.nix { inherit (self.lib) mkCheck; };

        # shardOf count name: the slice of a node, as podroles --shard.
        shardOf = import ./nix/shard.nix;
      };

      nixosModules.default = import ./nix/module.nix { inherit podrolesCheckFor; };

      packages = forAllSystems (pkgs: rec {
        podroles = podrolesFor pkgs;
        podroles-check = podrolesCheckFor pkgs;
        default = podroles;
        # The runner of the suites, for scenarios manifest's Job: the
        # binary and a CA bundle, as make images builds it FROM scratch,
        # with the same entrypoint and user.
        podroles-image = pkgs.dockerTools.buildLayeredImage {
          name = "podroles";
          tag = version;
          contents = [ podroles pkgs.cacert ];
          config = {
            Entrypoint = [ "/bin/podroles" ];
            User = "65532:65532";
          };
        };
      });

      apps = forAllSystems (pkgs: rec {
        podroles = { type = "app"; program = "${self.packages.${pkgs.system}.podroles}/bin/podroles"; };
        default = podroles;
      });

      checks = forAllSystems (pkgs: import ./nix/checks.nix {
        inherit pkgs;
        inherit (self.lib) mkCheck;
        podroles = self.packages.${pkgs.system}.podroles;
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell {
          # The servers of the local environment and the test control plane;
          # make servers builds the same from the Go module proxy.
          packages = with pkgs; [ go gopls nix gnumake openldap postgresql nginx haproxy openbao authelia etcd kubernetes kwok ];
        };
      });
    };
}
