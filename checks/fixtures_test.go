package checks_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/nixeval"
)

// The fixtures are nodes evaluated with the real nix: in testdata/rules,
// plain configs written against node-surface.md; in testdata/modules/nodes,
// hosts written as real ones are, through nixpkgs' own module system. Each
// says in "# want: RULE KIND NAME" lines exactly the findings the spec asks
// for (package internal/fixture reads them); a fixture with none must give
// no finding at all. Every rule needs a fixture that breaks it and one whose
// name starts with its ID and that passes it.

func requireNix(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("nix"); err != nil {
		t.Fatal("nix is not installed: the rule fixtures need the real nix (apt-get install nix-bin)")
	}
}

// checkFixtures evaluates fixtures, those checked with the same flags in one
// nix process, and returns each one's node in the fixtures' order.
func checkFixtures(t *testing.T, fixtures []*fixture.File) []*facts.Node {
	t.Helper()
	byModule := map[string][]int{}
	for i, fx := range fixtures {
		byModule[fx.K8sPodModule] = append(byModule[fx.K8sPodModule], i)
	}
	nodes := make([]*facts.Node, len(fixtures))
	for module, indexes := range byModule {
		var sources []nixeval.Source
		for _, i := range indexes {
			s, err := nixeval.FileSource(fixtures[i].Path)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		got, err := (&nixeval.Evaluator{K8sPodModule: module}).Extract(ctx, sources)
		cancel()
		if err != nil {
			t.Fatalf("extract fixtures (--k8s-pod-module %q): %v", module, err)
		}
		if len(got) != len(indexes) {
			t.Fatalf("got %d nodes from %d fixtures", len(got), len(indexes))
		}
		for j, i := range indexes {
			nodes[i] = got[j]
		}
	}
	return nodes
}

func TestRuleFixtures(t *testing.T) {
	requireNix(t)
	patterns := []string{"../testdata/rules/*.nix", "../testdata/modules/nodes/*.nix"}
	_, missing := fixture.FindNixpkgsLib(t)
	if missing != "" {
		patterns = patterns[:1] // the plain fixtures still run
	}
	fixtures, err := fixture.Glob(patterns...)
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	nodes := checkFixtures(t, fixtures)

	broken := map[string]bool{}
	passed := map[string]bool{}
	for i, fx := range fixtures {
		name := fx.Name()
		res := checks.CheckNode(nodes[i], checks.Rules())
		got := []string{}
		for _, f := range res.Findings {
			got = append(got, f.Rule+" "+string(f.Subject.Kind)+" "+f.Subject.Name)
			if !strings.Contains(f.Message, f.Subject.Name) {
				t.Errorf("%s: the message of %s does not name its subject %s: %s", name, f.Rule, f.Subject, f.Message)
			}
		}
		slices.Sort(got)
		if want := fx.WantStrings(); !slices.Equal(got, want) {
			t.Errorf("%s:\n got  %q\n want %q", fx.Path, got, want)
			for _, f := range res.Findings {
				t.Logf("  %s %s: %s", f.Rule, f.Subject, f.Message)
			}
		}
		ruleOfName, _, _ := strings.Cut(strings.TrimSuffix(name, filepath.Ext(name)), "-")
		wantsRule := false
		for _, w := range fx.Wants {
			broken[w.Rule] = true
			wantsRule = wantsRule || w.Rule == ruleOfName
		}
		if !wantsRule && slices.Contains(res.RulesRun, ruleOfName) {
			passed[ruleOfName] = true
		}
	}
	if missing != "" {
		t.Skipf("the plain fixtures pass; the module-system ones, and whether every rule has fixtures, need the lib: %s", missing)
	}
	for _, r := range checks.Rules() {
		if !broken[r.ID] {
			t.Errorf("rule %s (%s) has no fixture that breaks it", r.ID, r.Name)
		}
		if !passed[r.ID] {
			t.Errorf("rule %s (%s) has no passing fixture %s-*.nix on which it runs", r.ID, r.Name, r.ID)
		}
	}
}
