package checks_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
)

// The fixtures in testdata/rules are nodes written against node-surface.md
// and evaluated with the real nix. Each says in "# want: RULE KIND NAME"
// lines exactly the findings the spec asks for; a fixture with none must
// give no finding at all. Every rule needs a fixture that breaks it and one
// whose name starts with its ID and that passes it.

type fixture struct {
	path string
	want []string
}

func readFixtures(t *testing.T) []fixture {
	t.Helper()
	paths, err := filepath.Glob("../testdata/rules/*.nix")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var out []fixture
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		fx := fixture{path: p, want: []string{}}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if w, ok := strings.CutPrefix(sc.Text(), "# want:"); ok {
				fx.want = append(fx.want, strings.Join(strings.Fields(w), " "))
			}
		}
		f.Close()
		slices.Sort(fx.want)
		out = append(out, fx)
	}
	return out
}

func TestRuleFixtures(t *testing.T) {
	nix := nixtest.Nix(t)
	fixtures := readFixtures(t)
	var sources []nixeval.Source
	for _, fx := range fixtures {
		s, err := nixeval.FileSource(fx.path)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nodes, err := (&nixeval.Evaluator{Nix: nix}).Extract(ctx, sources)
	if err != nil {
		t.Fatalf("extract fixtures: %v", err)
	}
	if len(nodes) != len(fixtures) {
		t.Fatalf("got %d nodes from %d fixtures", len(nodes), len(fixtures))
	}

	broken := map[string]bool{}
	passed := map[string]bool{}
	for i, fx := range fixtures {
		name := filepath.Base(fx.path)
		res := checks.CheckNode(nodes[i], checks.Rules())
		got := []string{}
		for _, f := range res.Findings {
			got = append(got, f.Rule+" "+string(f.Subject.Kind)+" "+f.Subject.Name)
			if !strings.Contains(f.Message, f.Subject.Name) {
				t.Errorf("%s: the message of %s does not name its subject %s: %s", name, f.Rule, f.Subject, f.Message)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, fx.want) {
			t.Errorf("%s:\n got  %q\n want %q", name, got, fx.want)
			for _, f := range res.Findings {
				t.Logf("  %s %s: %s", f.Rule, f.Subject, f.Message)
			}
		}
		ruleOfName, _, _ := strings.Cut(name, "-")
		wantsRule := false
		for _, w := range fx.want {
			id, _, _ := strings.Cut(w, " ")
			broken[id] = true
			wantsRule = wantsRule || id == ruleOfName
		}
		if !wantsRule && slices.Contains(res.RulesRun, ruleOfName) {
			passed[ruleOfName] = true
		}
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
