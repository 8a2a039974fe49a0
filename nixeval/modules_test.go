package nixeval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/nixtest"
)

// The options of node-surface.md that the module-system nodes below set,
// declared with nixpkgs' own types.
const surfaceOptions = `{ lib, ... }:
let inherit (lib) mkOption types; in
{
  options.networking.hostName = mkOption { type = types.str; default = "nixos"; };
  options.systemd.services = mkOption {
    type = types.attrsOf (types.submodule { options.enable = mkOption { type = types.bool; default = true; }; });
    default = { };
  };
  options.fediversity.podRoles.roles = mkOption {
    type = types.attrsOf (types.submodule {
      options.replicas = mkOption { type = types.int; default = 1; };
      options.units = mkOption { type = types.listOf types.str; default = [ ]; };
    });
    default = { };
  };
}
`

// TestModuleSystemErrorsNameTheUsersFile evaluates nodes of several module
// files through nixpkgs' real lib: an evaluation error names, in its one
// line, the option and the user's file that nix's trace points at first
// outside lib, never lib/modules.nix.
func TestModuleSystemErrorsNameTheUsersFile(t *testing.T) {
	lib := nixtest.NixpkgsLib(t)
	requireNix(t)
	node := func(modules ...string) string {
		return `let lib = import (/. + "` + lib + `"); in lib.evalModules { modules = [ ./options.nix ` + strings.Join(modules, " ") + ` ]; }`
	}
	dir := writeTree(t, map[string]string{
		"options.nix": surfaceOptions,
		"hosts/web.nix": `{ lib, ... }: {
  networking.hostName = "web";
  systemd.services.web = { };
}
`,
		"hosts/web-again.nix": `{ lib, ... }: {
  networking.hostName = "web-2";
}
`,
		"roles.nix": `{ lib, ... }: {
  fediversity.podRoles.roles.sidekiq = {
    units = [ "web" ];
    replicas = lib.mkDefault "2";
  };
}
`,
		"loop.nix": `{ config, lib, ... }: {
  systemd.services = lib.mapAttrs (name: unit: unit) config.systemd.services;
}
`,
		"conflict.nix":  node("./hosts/web.nix", "./hosts/web-again.nix"),
		"type.nix":      node("./hosts/web.nix", "./roles.nix"),
		"recursion.nix": node("./hosts/web.nix", "./loop.nix"),
	})
	for _, c := range []struct {
		file string
		want map[string]string
	}{
		{"conflict.nix", map[string]string{
			"2.8": "eval file $D/conflict.nix: The option `networking.hostName' has conflicting definition values: - In `$D/hosts/web-again.nix': \"web-2\" - In `$D/hosts/web.nix': \"web\" Use `lib.mkForce value` or `lib.mkDefault value` to change the priority on any of these definitions. (at $D/hosts/web-again.nix)",
		}},
		{"type.nix", map[string]string{
			"2.8": "eval node web (file $D/type.nix): A definition for option `fediversity.podRoles.roles.sidekiq.replicas' is not of type `signed integer'. Definition values: - In `$D/roles.nix': \"2\" (at $D/roles.nix)",
		}},
		{"recursion.nix", map[string]string{
			// 2.8's trace names the file whose definitions were evaluated,
			// 2.24's the line.
			"2.8":  "eval node web (file $D/recursion.nix): option systemd.services: infinite recursion encountered (at $D/loop.nix)",
			"2.24": "eval node web (file $D/recursion.nix): option systemd.services: infinite recursion encountered (at $D/loop.nix:2:54)",
		}},
	} {
		t.Run(c.file, func(t *testing.T) {
			want := strings.ReplaceAll(nixtest.Pick(t, c.want), "$D", dir)
			_, err := extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, c.file)))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != want {
				t.Errorf("on nix %s:\n got  %s\n want %s", nixtest.NixVersion(t), err, want)
			}
			if strings.Contains(err.Error(), "modules.nix") {
				t.Errorf("the error points into nixpkgs' lib: %s", err)
			}
		})
	}
}
