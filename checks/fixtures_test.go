package checks_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/report"
)

// The fixtures are nodes evaluated with the real nix: in testdata/rules,
// plain configs written against node-surface.md; in testdata/modules/nodes,
// hosts written as real ones are, through nixpkgs' own module system. Each
// says in "# want: RULE KIND NAME" lines exactly the findings the spec asks
// for (package internal/fixture reads them); a fixture with none must give
// no finding at all. Every rule needs a fixture that breaks it and one whose
// name starts with its ID and that passes it.

// checkFixtures evaluates fixtures, those checked with the same flags in one
// nix process, checks them, locates their findings (a second nix process)
// and returns each one's result in the fixtures' order. Locations are
// absolute.
func checkFixtures(t *testing.T, fixtures []*fixture.File) []*checks.Result {
	t.Helper()
	byModule := map[string][]int{}
	for i, fx := range fixtures {
		byModule[fx.K8sPodModule] = append(byModule[fx.K8sPodModule], i)
	}
	results := make([]*checks.Result, len(fixtures))
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
		ev := &nixeval.Evaluator{Nix: nixtest.Nix(t), K8sPodModule: module}
		got, err := ev.Extract(ctx, sources)
		if err != nil {
			cancel()
			t.Fatalf("extract fixtures (--k8s-pod-module %q): %v", module, err)
		}
		if len(got) != len(indexes) {
			cancel()
			t.Fatalf("got %d nodes from %d fixtures", len(got), len(indexes))
		}
		checked := checks.Check(got)
		err = checks.Locate(ctx, checked, ev.Locate, report.Paths{})
		cancel()
		if err != nil {
			t.Fatalf("locate the findings of the fixtures (--k8s-pod-module %q): %v", module, err)
		}
		for j, i := range indexes {
			results[i] = checked[j]
		}
	}
	return results
}

// allFixtures reads the rule fixtures: the module-system ones too when
// nixpkgs' lib is there (missing says why not); the plain ones always run.
func allFixtures(t *testing.T) (fixtures []*fixture.File, missing string) {
	t.Helper()
	patterns := []string{"../testdata/rules/*.nix", "../testdata/modules/nodes/*.nix"}
	_, missing = fixture.FindNixpkgsLib(t)
	if missing != "" {
		patterns = patterns[:1]
	}
	fixtures, err := fixture.Glob(patterns...)
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	return fixtures, missing
}

func TestRuleFixtures(t *testing.T) {
	nixtest.Nix(t)
	fixtures, missing := allFixtures(t)
	results := checkFixtures(t, fixtures)

	broken := map[string]bool{}
	passed := map[string]bool{}
	for i, fx := range fixtures {
		name := fx.Name()
		res := results[i]
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

// TestFixtureLocations holds every finding of every fixture to the place
// its want line gives: the file (relative to the fixture), line and column
// of the definition that is wrong, as nix finds it through the module
// system or in a plain config.
func TestFixtureLocations(t *testing.T) {
	nixtest.Nix(t)
	fixtures, _ := allFixtures(t)
	results := checkFixtures(t, fixtures)
	for i, fx := range fixtures {
		dir, err := filepath.Abs(filepath.Dir(fx.Path))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, w := range fx.Wants {
			if w.At == "" {
				t.Errorf("%s: want %s says no location: every finding of a fixture states where it points (at FILE:LINE:COLUMN)", fx.Path, w)
			}
			want[w.String()] = w.At
		}
		for _, f := range results[i].Findings {
			key := f.Rule + " " + string(f.Subject.Kind) + " " + f.Subject.Name
			got := "nowhere"
			if f.Location != nil {
				rel, err := filepath.Rel(dir, f.Location.File)
				if err != nil {
					rel = f.Location.File
				}
				got = facts.Location{File: rel, Line: f.Location.Line, Column: f.Location.Column}.String()
			}
			if at, ok := want[key]; ok && got != at {
				t.Errorf("%s: %s at %s, want at %s", fx.Path, key, got, at)
				for _, n := range f.Notes {
					t.Logf("  note %s: %s", n.Location, n.Message)
				}
			}
		}
	}
}

// TestFixtureLocationsThroughFacts holds the facts that lib.mkCheck and the
// node module write to the locations of podroles check --file. Their check
// runs in the build sandbox, with no nix to ask: the definitions the facts
// carry must place every finding of every fixture, with the same notes.
func TestFixtureLocationsThroughFacts(t *testing.T) {
	nix := nixtest.Nix(t)
	fixtures, _ := allFixtures(t)
	direct := checkFixtures(t, fixtures)
	byModule := map[string][]int{}
	for i, fx := range fixtures {
		byModule[fx.K8sPodModule] = append(byModule[fx.K8sPodModule], i)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// One document for fixtures that share a k8s-pod module and no node
	// name: the facts name each node as podroles check did.
	var batches [][]int
	for _, indexes := range byModule {
		var open []map[string]bool
		var at []int
		for _, i := range indexes {
			b := slices.IndexFunc(open, func(names map[string]bool) bool { return !names[direct[i].Node] })
			if b < 0 {
				b = len(open)
				open = append(open, map[string]bool{})
				at = append(at, len(batches))
				batches = append(batches, nil)
			}
			open[b][direct[i].Node] = true
			batches[at[b]] = append(batches[at[b]], i)
		}
	}
	for _, indexes := range batches {
		module := fixtures[indexes[0]].K8sPodModule
		var nodes strings.Builder
		for _, i := range indexes {
			path, err := filepath.Abs(fixtures[i].Path)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&nodes, "%q = import %s;\n", direct[i].Node, path)
		}
		k8sPod := "null"
		if module != "" {
			k8sPod = module
		}
		expr := fmt.Sprintf("import %s/nixeval/document.nix { nodes = { %s }; k8sPodModule = %s; }", root, nodes.String(), k8sPod)
		out, err := exec.Command(nix, "--extra-experimental-features", "nix-command", "eval", "--json", "--impure", "--expr", expr).Output()
		if err != nil {
			var stderr []byte
			if exit, ok := err.(*exec.ExitError); ok {
				stderr = exit.Stderr
			}
			t.Fatalf("facts of the fixtures (k8s-pod module %q): %v\n%s", module, err, stderr)
		}
		doc := filepath.Join(t.TempDir(), "facts.json")
		if err := os.WriteFile(doc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		source, err := nixeval.FactsSource(doc)
		if err != nil {
			t.Fatal(err)
		}
		ev := &nixeval.Evaluator{}
		loaded, err := ev.Load(context.Background(), []nixeval.Source{source})
		if err != nil {
			t.Fatal(err)
		}
		checked := checks.Check(loaded)
		if err := checks.Locate(context.Background(), checked, ev.Locate, report.Paths{}); err != nil {
			t.Fatal(err)
		}
		byNode := map[string]*checks.Result{}
		for _, res := range checked {
			byNode[res.Node] = res
		}
		for _, i := range indexes {
			want, got := direct[i], byNode[direct[i].Node]
			// PR607 judges the node's name: a file's node takes it from
			// networking.hostName (or the file's name), a flake's from its
			// attribute, as the facts do; and PR508 follows it. TestCommandAndMkCheckAgree
			// holds the facts to podroles check --flake.
			namesNode := func(res *checks.Result) bool {
				return res != nil && slices.ContainsFunc(res.Findings, func(f checks.Finding) bool { return f.Rule == "PR607" })
			}
			if namesNode(want) || namesNode(got) {
				continue
			}
			if got == nil || len(got.Findings) != len(want.Findings) {
				t.Errorf("%s: the facts give other findings: %s", fixtures[i].Path, findingsOf(got))
				continue
			}
			for j, f := range want.Findings {
				g := got.Findings[j]
				key := f.Rule + " " + f.Subject.String()
				if g.Rule+" "+g.Subject.String() != key {
					t.Errorf("%s: finding %d is %s through the facts, %s through check --file", fixtures[i].Path, j, g.Rule+" "+g.Subject.String(), key)
					continue
				}
				if !reflect.DeepEqual(g.Location, f.Location) {
					t.Errorf("%s: %s is at %v through the facts, at %v through check --file", fixtures[i].Path, key, g.Location, f.Location)
				}
				if !reflect.DeepEqual(g.Notes, f.Notes) {
					t.Errorf("%s: %s has notes %+v through the facts, %+v through check --file", fixtures[i].Path, key, g.Notes, f.Notes)
				}
			}
		}
	}
}

func findingsOf(res *checks.Result) []string {
	if res == nil {
		return nil
	}
	var out []string
	for _, f := range res.Findings {
		out = append(out, f.Rule+" "+f.Subject.String()+": "+f.Message)
	}
	return out
}
