package nixeval

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// TestModuleSystemErrorsNameTheUsersFile evaluates nodes of several module
// files through nixpkgs' real lib (the NixOS stand-in of testdata/modules):
// an evaluation error names, in its one line, the option and the user's
// file that nix's trace points at first outside lib, never lib/modules.nix.
func TestModuleSystemErrorsNameTheUsersFile(t *testing.T) {
	fixture.NixpkgsLib(t)
	requireNix(t)
	host := "{ lib, ... }: {\n  networking.hostName = \"web\";\n  systemd.services.web = { };\n}\n"
	for _, c := range []struct {
		name string
		more map[string]string
		// want is the whole line, by release; $D is the node's folder.
		want map[string]string
	}{
		{"conflicting definitions", map[string]string{"web-again.nix": "{ lib, ... }: {\n  networking.hostName = \"web-2\";\n}\n"}, map[string]string{
			"2.8": "eval file $D/node.nix: The option `networking.hostName' has conflicting definition values: - In `$D/web-again.nix': \"web-2\" - In `$D/host.nix': \"web\" Use `lib.mkForce value` or `lib.mkDefault value` to change the priority on any of these definitions. (at $D/web-again.nix)",
		}},
		{"type error", map[string]string{"roles.nix": "{ lib, ... }: {\n  fediversity.podRoles.roles.sidekiq = {\n    units = [ \"web\" ];\n    replicas = lib.mkDefault \"2\";\n  };\n}\n"}, map[string]string{
			"2.8": "eval node web (file $D/node.nix): A definition for option `fediversity.podRoles.roles.sidekiq.replicas' is not of type `null or (positive integer, meaning >0)'. Definition values: - In `$D/roles.nix': \"2\" (at $D/roles.nix)",
		}},
		{"infinite recursion", map[string]string{"loop.nix": "{ config, lib, ... }: {\n  systemd.services = lib.mapAttrs (name: unit: unit) config.systemd.services;\n}\n"}, map[string]string{
			// 2.8's trace names the file whose definitions recursed,
			// 2.24's the line.
			"2.8":  "eval node web (file $D/node.nix): option systemd.services: infinite recursion encountered (at $D/loop.nix)",
			"2.24": "eval node web (file $D/node.nix): option systemd.services: infinite recursion encountered (at $D/loop.nix:2:54)",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			node := fixture.ModuleNode(t, host, c.more)
			want := strings.ReplaceAll(nixtest.Pick(t, c.want), "$D", filepath.Dir(node))
			_, err := extract(t, evaluator(t), mustSources(t, FileSource, node))
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
