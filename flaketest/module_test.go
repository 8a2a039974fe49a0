package flaketest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// moduleNodes writes, in a new folder, nodes of nixpkgs' real module system
// (the NixOS stand-in of testdata/modules) that import the flake's node
// module, one file per name, each with the modules given as Nix text, and
// returns the folder. The modules' text may name the repository (repo) and
// testdata/modules (modules). The node module gets the nixpkgs stand-in as pkgs;
// system.checks is declared as NixOS declares it.
func moduleNodes(t *testing.T, nodes map[string]string) string {
	t.Helper()
	fixture.NixpkgsLib(t)
	dir := t.TempDir()
	files := map[string]string{"with-podroles.nix": `# A node that imports podroles' node module, from the flake's outputs.
let
  repo = ` + repoRoot + `;
  modules = repo + "/testdata/modules";
  nixpkgs = import (repo + "/flaketest/testdata/nixpkgs-stub.nix");
  self = (import (repo + "/flake.nix")).outputs { inherit self nixpkgs; } // { outPath = repo; shortRev = "abc1234"; };
in
f: (import (modules + "/nixos") { }).nixosSystem {
  modules = [
    self.nixosModules.default
    ({ lib, ... }: {
      options.system.checks = lib.mkOption { type = lib.types.listOf lib.types.package; default = [ ]; internal = true; };
      config._module.args.pkgs = nixpkgs.legacyPackages.x86_64-linux;
    })
  ] ++ f { inherit repo modules; };
}
`}
	for name, modules := range nodes {
		files[name+".nix"] = "import ./with-podroles.nix ({ repo, modules }: [ " + modules + " ])\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// reportOf parses a JSON report and gives its one node's result, less its
// source, and the locations of its findings apart, by rule and subject.
func reportOf(t *testing.T, way string, data []byte) (*checks.Result, map[string]*facts.Location) {
	t.Helper()
	var r checks.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v\n%s", way, err, data)
	}
	if len(r.Nodes) != 1 {
		t.Fatalf("%s: %d nodes, want 1\n%s", way, len(r.Nodes), data)
	}
	res := r.Nodes[0]
	locations := map[string]*facts.Location{}
	for i, f := range res.Findings {
		locations[f.Rule+" "+f.Subject.String()] = f.Location
		res.Findings[i].Location, res.Findings[i].Notes = nil, nil
	}
	res.Source = ""
	return res, locations
}

// TestNodeModuleAgrees builds nodes of the real module system that import
// the node module, as a platform's hosts do: the check it adds to
// system.checks gives, finding for finding and rule for rule, what
// podroles check --file and lib.mkCheck give for the very same node. The
// nodes are hosts that import a k8s-pod module themselves and misspell a
// unit (which the module used to pass, as only the node's config reached
// it): k8s-pod.nix, one of several files, and one whose definitions cannot
// decide (PR107); one whose lists read config.systemd.services (the FR-007
// probe, which needs extendModules); and a clean one.
func TestNodeModuleAgrees(t *testing.T) {
	bin := buildPodroles(t)
	cases := []struct {
		name, modules string
		status        int
		want          []string
	}{
		{"own-k8s-pod", `(modules + "/hosts/mastodon") (modules + "/k8s-pod.nix")
		  ({ lib, ... }: { fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ]; })`,
			1, []string{"PR101 unit mastodon-sidekik-all", "PR103 unit mastodon-sidekiq-all"}},
		{"own-split-k8s-pod", `(modules + "/hosts/mastodon") (modules + "/k8s-pod-split")
		  ({ lib, ... }: { fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ]; })`,
			1, []string{"PR101 unit mastodon-sidekik-all", "PR103 unit mastodon-sidekiq-all"}},
		{"own-k8s-pod-role-targets", `(modules + "/hosts/mastodon") (modules + "/k8s-pod-role-targets.nix")
		  ({ lib, ... }: { fediversity.podRoles.roles.sidekiq.units = lib.mkForce [ "mastodon-sidekik-all" ]; })`,
			1, []string{"PR103 unit mastodon-sidekiq-all", "PR107 unit mastodon-sidekik-all"}},
		{"lists-read-units", `(modules + "/hosts/mastodon") (modules + "/hosts/mastodon/main-units-from-systemd.nix")`,
			1, []string{"PR106 option fediversity.podRoles.mainUnits"}},
		{"clean", `(modules + "/hosts/mastodon") (modules + "/k8s-pod.nix")`, 0, nil},
	}
	nodes := map[string]string{}
	for _, c := range cases {
		nodes[c.name] = c.modules
	}
	dir := moduleNodes(t, nodes)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := filepath.Join(dir, c.name+".nix")
			var got struct {
				Module  []string
				MkCheck string
			}
			nixEval(t, bin, `let node = import `+node+`; in {
			  module = map (c: c.buildCommand) node.config.system.checks;
			  mkCheck = (self.lib.mkCheck { inherit pkgs; nodes.mastodon = node; }).buildCommand;
			}`, &got)
			if len(got.Module) != 1 {
				t.Fatalf("the module adds %d checks, want one", len(got.Module))
			}
			viaFacts := func(way, script string) (*checks.Result, map[string]*facts.Location) {
				status, output, out := runScript(t, script)
				if status != c.status {
					t.Errorf("%s: exit %d, want %d\n%s", way, status, c.status, output)
				}
				data, _ := exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--format", "json", "--facts", filepath.Join(out, "facts.json")).Output()
				return reportOf(t, way, data)
			}
			module, moduleAt := viaFacts("the node module", got.Module[0])
			mkCheck, mkCheckAt := viaFacts("lib.mkCheck", got.MkCheck)
			cmd := exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--nix", nixtest.Nix(t), "--format", "json", "--file", node)
			data, err := cmd.Output()
			if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() != c.status || err != nil && !ok {
				t.Errorf("podroles check --file: %v\n%s", err, data)
			}
			direct, directAt := reportOf(t, "podroles check --file", data)

			// The findings are located at evaluation time, where the
			// build's check has no nix: where podroles check locates them.
			for key, at := range directAt {
				if m := moduleAt[key]; !reflect.DeepEqual(m, at) {
					t.Errorf("%s: the node module locates it at %v, podroles check at %v", key, m, at)
				}
				if !reflect.DeepEqual(mkCheckAt[key], at) {
					t.Errorf("%s: lib.mkCheck locates it at %v, podroles check at %v", key, mkCheckAt[key], at)
				}
			}
			if at := moduleAt["PR101 unit mastodon-sidekik-all"]; at != nil && at.Line == 0 {
				t.Errorf("a misspelled name in a role's units is located without its line: %v", at)
			}

			var findings []string
			for _, f := range direct.Findings {
				findings = append(findings, f.Rule+" "+f.Subject.String())
			}
			if !reflect.DeepEqual(findings, c.want) {
				t.Errorf("podroles check --file finds %q, want %q", findings, c.want)
			}
			if !reflect.DeepEqual(module, direct) || !reflect.DeepEqual(mkCheck, direct) {
				a, _ := json.Marshal(module)
				b, _ := json.Marshal(mkCheck)
				d, _ := json.Marshal(direct)
				t.Errorf("the node module, lib.mkCheck and podroles check --file disagree:\n module  %s\n mkCheck %s\n check   %s", a, b, d)
			}
			if !strings.Contains(strings.Join(module.RulesRun, " "), "PR106") {
				t.Errorf("the node module did not run the FR-007 probe (PR106): %v", module.RulesRun)
			}
		})
	}
}

// TestNodeModule: on the real module system the node module adds one check
// to system.checks, whose script passes on a good node and fails on the
// broken one, none when turned off, and declares its options.
func TestNodeModule(t *testing.T) {
	bin := buildPodroles(t)
	dir := moduleNodes(t, map[string]string{
		"good":   `(repo + "/examples/mastodon.nix")`,
		"broken": `(repo + "/examples/broken/mastodon-renamed.nix")`,
		"off":    `(repo + "/examples/mastodon.nix") { podroles.check.enable = false; }`,
		"strict": `(repo + "/examples/mastodon.nix") { podroles.check.strict = true; }`,
	})
	var got struct {
		Good, Broken, Off, Strict []string
		Options                   map[string]any
	}
	nixEval(t, bin, `let scripts = name: map (c: c.buildCommand) (import (`+dir+` + "/${name}.nix")).config.system.checks; in {
	  good = scripts "good";
	  broken = scripts "broken";
	  off = scripts "off";
	  strict = scripts "strict";
	  options = builtins.mapAttrs (_: o: o.default) (import `+dir+`/good.nix).options.podroles.check;
	}`, &got)
	if len(got.Good) != 1 || len(got.Broken) != 1 || len(got.Strict) != 1 {
		t.Fatalf("the module adds %d, %d and %d checks, want one each", len(got.Good), len(got.Broken), len(got.Strict))
	}
	if status, output, _ := runScript(t, got.Good[0]); status != 0 || !strings.Contains(output, "mastodon (nixosConfigurations.mastodon, on k8s-pod.nix): ok") {
		t.Errorf("the good node's build fails: exit %d\n%s", status, output)
	}
	if status, output, _ := runScript(t, got.Broken[0]); status != 1 || !strings.Contains(output, "unit mastodon-streaming-2") {
		t.Errorf("the broken node's build passes: exit %d\n%s", status, output)
	}
	if !strings.Contains(got.Strict[0], " --strict") {
		t.Errorf("podroles.check.strict = true does not make the check strict:\n%s", got.Strict[0])
	}
	if len(got.Off) != 0 {
		t.Error("podroles.check.enable = false still adds the check")
	}
	if !reflect.DeepEqual(got.Options, map[string]any{"enable": true, "strict": false}) {
		t.Errorf("options = %v", got.Options)
	}
}
