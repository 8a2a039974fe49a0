package nixeval

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/fixture"
)

// TestFilesThatAreNoNode: a file that would pass every rule because it is
// no node (a flake's flake.nix, a module written as an attribute set, a
// misspelled top-level name, nothing of the node surface) is refused,
// naming what it is; a node of the surface, a config under config, and a
// system whose modules import others are taken.
func TestFilesThatAreNoNode(t *testing.T) {
	requireNix(t)
	refused := map[string]string{
		"flake.nix":          `{ description = "hosts"; inputs = { }; outputs = { self }: { nixosConfigurations = { }; }; }`,
		"hosts/flake.nix":    `{ outputs = { self }: { }; }`,
		"empty.nix":          `{ }`,
		"foo.nix":            `{ foo = 1; }`,
		"hostname.nix":       `{ networking.hostName = "web"; }`,
		"module.nix":         `{ imports = [ ./other.nix ]; fediversity.podRoles.mainUnits = [ "web" ]; }`,
		"options.nix":        `{ options = { }; config.systemd.services.web = { }; }`,
		"conditional.nix":    `{ config = { _type = "if"; condition = true; content = { systemd.services.web = { }; }; }; }`,
		"misspelled.nix":     `{ fediversty.podRoles.mainUnits = [ "web" ]; systemd.services.web = { }; }`,
		"case.nix":           `{ Systemd.services.web = { }; }`,
		"other.nix":          `{ systemd.services.web = { }; }`,
		"wrapped.nix":        `{ config = { systemd.services.web = { }; }; }`,
		"nixos-services.nix": `{ services.nginx.enable = true; systemd.services.web = { }; }`,
		"int.nix":            `3`,
		"float.nix":          `1.5`,
		"null.nix":           `null`,
		"string.nix":         `"web"`,
		"bool.nix":           `true`,
		"path.nix":           `./web.nix`,
	}
	dir := writeTree(t, refused)
	t.Chdir(dir)
	want := map[string]string{
		"flake.nix":       "flake.nix is a flake (it has outputs), not a node: check its nodes with --flake ., or one of them with --flake .#NODE",
		"hosts/flake.nix": "hosts/flake.nix is a flake (it has outputs), not a node: check its nodes with --flake ./hosts, or one of them with --flake ./hosts#NODE",
		"empty.nix":       "empty.nix sets nothing of the node surface (systemd.services, system.services, networking.firewall, fediversity.podRoles, fediversity.k8sPod, fediversity.lldap, fediversity.authelia; docs/node-surface.md): it is no node, and every rule would pass it",
		"foo.nix":         "foo.nix sets nothing of the node surface (systemd.services, system.services, networking.firewall, fediversity.podRoles, fediversity.k8sPod, fediversity.lldap, fediversity.authelia; docs/node-surface.md), only foo: it is no node, and every rule would pass it",
		"hostname.nix":    "hostname.nix sets nothing of the node surface",
		"module.nix":      "module.nix is a NixOS module (it has imports at the top), not a node: podroles reads no module's imports or options; give a NixOS system of it, such as nixpkgs.lib.nixosSystem { modules = [ ./module.nix ]; }, or check the host's flake with --flake",
		"options.nix":     "options.nix is a NixOS module (it has options at the top), not a node",
		"conditional.nix": "conditional.nix is a NixOS module (it has a conditional config at the top), not a node",
		"misspelled.nix":  "misspelled.nix sets fediversty, which is no option of the node surface: did you mean fediversity?",
		"case.nix":        "case.nix sets Systemd, which is no option of the node surface: did you mean systemd?",
		// With the right article for each kind of value.
		"int.nix":    "int.nix is an integer, not a node's config attribute set or a NixOS system",
		"float.nix":  "float.nix is a float, not",
		"null.nix":   "null.nix is null, not",
		"string.nix": "string.nix is a string, not",
		"bool.nix":   "bool.nix is a boolean, not",
		"path.nix":   "path.nix is a path, not",
	}
	var sources []Source
	for name := range refused {
		sources = append(sources, mustSources(t, FileSource, name)...)
	}
	nodes, _, err := evaluator(t).LoadShard(t.Context(), sources)
	failed, ok := NodeErrors(err)
	if !ok {
		t.Fatalf("no node errors: %v", err)
	}
	got := map[string]string{}
	for _, ne := range failed {
		got[strings.TrimPrefix(ne.Source, "file:")] = ne.Reason()
		if l := ne.Location(); l == nil || l.File != filepath.Join(dir, strings.TrimPrefix(ne.Source, "file:")) {
			t.Errorf("%s is placed at %v, want its file", ne.Source, l)
		}
	}
	for name, w := range want {
		if !strings.HasPrefix(got[name], w) {
			t.Errorf("%s:\n got  %q\n want %q", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("refused %d files, want %d: %q", len(got), len(want), got)
	}
	var taken []string
	for _, n := range nodes {
		taken = append(taken, n.Name)
	}
	if strings.Join(taken, " ") != "nixos-services other wrapped" {
		t.Errorf("taken %q, want nixos-services, other and wrapped", taken)
	}
}

// TestModuleSystemRefusesItsOwnMisspelling: on the module system a
// misspelled top-level name is the module system's own error, and a host
// of modules that import others is a node.
func TestModuleSystemRefusesItsOwnMisspelling(t *testing.T) {
	requireNix(t)
	fixture.NixpkgsLib(t)
	good := fixture.ModuleNode(t, `{ imports = [ ./web.nix ]; }`, map[string]string{"web.nix": `{ systemd.services.web = { }; fediversity.podRoles.mainUnits = [ "web" ]; }`})
	if nodes, err := extract(t, evaluator(t), mustSources(t, FileSource, good)); err != nil || len(nodes) != 1 || len(nodes[0].PodRoles.MainUnits) != 1 {
		t.Fatalf("a host of imports: %d nodes, %v", len(nodes), err)
	}
	bad := fixture.ModuleNode(t, `{ fediversty.podRoles.mainUnits = [ "web" ]; systemd.services.web = { }; }`, nil)
	_, err := extract(t, evaluator(t), mustSources(t, FileSource, bad))
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "fediversty") {
		t.Errorf("a misspelled name on the module system: %v", err)
	}
}
