package nodecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/cmd/internal/plancmd"
	"github.com/fediversity/podroles/internal/golden"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/report"
)

// run runs the commands under a root of their own, as a binary's main
// does.
func run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, commandsAndPlan, args...)
}

// commandsAndPlan are the node commands and plan, as podroles has them:
// the tests of the sources, -o and errors cover plan as they do check.
func commandsAndPlan(ios *cli.Streams) []*cobra.Command {
	return append(Commands(ios), plancmd.NewCmd(ios))
}

func repo(path string) string { return filepath.Join("..", "..", "..", path) }

var examples = []string{repo("examples/mastodon.nix"), repo("examples/directory.nix"), repo("examples/mastodon-vm.nix")}

func TestCheckExamplesPass(t *testing.T) {
	r := run(t, append([]string{"check"}, examples...)...)
	if r.Code != cli.ExitOK {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	for _, want := range []string{
		"directory (file:../../../examples/directory.nix, on k8s-pod.nix): ok",
		"mastodon-vm (file:../../../examples/mastodon-vm.nix, not on k8s-pod.nix): ok",
		"3 nodes checked: 0 errors, 0 warnings: passed",
	} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Out)
		}
	}
}

func TestCheckBrokenJSON(t *testing.T) {
	r := run(t, "check", "--format", "json", "--file", repo("examples/broken/mastodon-renamed.nix"), repo("examples/mastodon-vm.nix"))
	if r.Code != cli.ExitFailed {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.ErrOut)
	}
	var report struct {
		Version int
		Strict  bool
		Summary struct {
			Nodes, EvalErrors, Errors, Warnings int
			Passed                              bool
		}
		Nodes []struct {
			Node         string
			Source       string
			K8sPod       bool
			RulesRun     []string
			RulesSkipped []struct{ Rule, Reason string }
			Findings     []struct {
				Rule, Spec, Severity, Node string
				Subject                    struct{ Kind, Name string }
				Message                    string
				Location                   *struct {
					File         string
					Line, Column int
				}
				Notes []struct {
					Message  string
					Location *struct {
						File         string
						Line, Column int
					}
				}
			}
		}
		EvalErrors []checks.EvalFailure
	}
	dec := json.NewDecoder(strings.NewReader(r.Out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&report); err != nil {
		t.Fatalf("decode: %v\n%s", err, r.Out)
	}
	if report.Version != 2 || report.Summary.Nodes != 2 || report.Summary.EvalErrors != 0 || len(report.EvalErrors) != 0 || report.Summary.Errors != 4 || report.Summary.Warnings != 1 || report.Summary.Passed {
		t.Errorf("summary = %+v", report.Summary)
	}
	broken, vm := report.Nodes[0], report.Nodes[1]
	if broken.Node != "mastodon" || vm.Node != "mastodon-vm" {
		t.Fatalf("nodes out of order: %s, %s", broken.Node, vm.Node)
	}
	f := broken.Findings[0]
	if f.Rule != "PR101" || f.Spec != "FR-008, US2-1" || f.Severity != "error" || f.Node != "mastodon" ||
		f.Subject.Kind != "unit" || f.Subject.Name != "mastodon-sidekiq-all" || !strings.Contains(f.Message, "did you mean mastodon-sidekiq-default?") {
		t.Errorf("first finding = %+v", f)
	}
	// The example is outside the working directory (the package's
	// folder), so its path is absolute; line 13 lists the old name.
	example, _ := filepath.Abs(repo("examples/broken/mastodon-renamed.nix"))
	if l := f.Location; l == nil || l.File != example || l.Line != 13 || l.Column == 0 {
		t.Errorf("first finding's location = %+v", f.Location)
	}
	// On k8s every rule runs, but the FR-007 probe and PR107, which need
	// the module system that a plain config does not have.
	if len(broken.RulesRun) != len(checks.Rules())-2 || len(broken.RulesSkipped) != 2 || broken.RulesSkipped[0].Rule != "PR106" || broken.RulesSkipped[1].Rule != "PR107" {
		t.Errorf("on k8s every rule runs: ran %d, skipped %+v", len(broken.RulesRun), broken.RulesSkipped)
	}
	if len(vm.RulesSkipped) == 0 || !strings.HasPrefix(vm.RulesSkipped[0].Reason, "FR-013") {
		t.Errorf("off k8s the k8s rules are skipped with FR-013: %+v", vm.RulesSkipped)
	}
}

func TestCheckJUnitToFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "check.xml")
	r := run(t, "check", "--format", "junit", "--output", out, repo("examples/broken/mastodon-renamed.nix"))
	if r.Code != cli.ExitFailed {
		t.Fatalf("exit %d\n%s", r.Code, r.ErrOut)
	}
	if !strings.Contains(r.Out, "1 node checked: 4 errors, 1 warning: failed") {
		t.Errorf("with --output the text report goes to stdout:\n%s", r.Out)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var suites report.Suites
	if err := xml.Unmarshal(data, &suites); err != nil {
		t.Fatalf("parse junit: %v\n%s", err, data)
	}
	if len(suites.Suites) != 1 || suites.Suites[0].Name != "mastodon" || suites.Tests != len(checks.Rules()) || suites.Failures != 2 {
		t.Fatalf("suites: tests %d failures %d", suites.Tests, suites.Failures)
	}
	failed := map[string]string{}
	for _, c := range suites.Suites[0].Cases {
		if c.Failure != nil {
			failed[c.Name] = c.Failure.Text
		}
	}
	if !strings.Contains(failed["PR101 unknown-unit"], "unit mastodon-streaming-2") || !strings.Contains(failed["PR103 unlisted-unit"], "unit mastodon-sidekiq-default") {
		t.Errorf("failures = %v", failed)
	}
}

func TestStrictCountsWarnings(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, "shared-init.nix")
	os.WriteFile(node, []byte(`{
		systemd.services = { app-init = { }; web = { }; };
		fediversity.k8sPod.enable = true;
		fediversity.podRoles = { mainUnits = [ "web" ]; sharedUnits = [ "app-init" ]; };
	}`), 0o644)
	if r := run(t, "check", node); r.Code != cli.ExitOK || !strings.Contains(r.Out, "PR104") {
		t.Errorf("a warning alone passes: exit %d\n%s", r.Code, r.Out)
	}
	if r := run(t, "check", "--strict", node); r.Code != cli.ExitFailed {
		t.Errorf("--strict: exit %d, want 1\n%s", r.Code, r.Out)
	}
}

// TestFactsRoundTrip checks that facts written by podroles facts and read
// back with --facts, without nix, give the same findings.
func TestFactsRoundTrip(t *testing.T) {
	facts := filepath.Join(t.TempDir(), "facts.json")
	nodes := append([]string{repo("examples/broken/mastodon-renamed.nix")}, examples[1:]...)
	if r := run(t, append([]string{"facts", "-o", facts}, nodes...)...); r.Code != cli.ExitOK {
		t.Fatalf("facts: exit %d\n%s", r.Code, r.ErrOut)
	}
	direct := run(t, append([]string{"check", "--format", "json"}, nodes...)...)
	t.Setenv("PATH", t.TempDir()) // no nix, and --nix names none
	fromFacts := run(t, "check", "--nix", "no-such-nix", "--format", "json", "--facts", facts)
	if direct.Code != cli.ExitFailed || fromFacts.Code != cli.ExitFailed {
		t.Fatalf("exit %d and %d\n%s", direct.Code, fromFacts.Code, fromFacts.ErrOut)
	}
	var a, b checks.Report
	json.Unmarshal([]byte(direct.Out), &a)
	json.Unmarshal([]byte(fromFacts.Out), &b)
	// The facts carry the definitions of what findings could be about:
	// a check of them, without nix, places each finding where a check of
	// the node does (the sharded CI recipe of docs/scale.md).
	located := 0
	for _, res := range a.Nodes {
		for i := range res.Findings {
			if res.Findings[i].Location != nil {
				located++
			}
		}
	}
	if located == 0 {
		t.Error("the check with nix located no finding")
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("--facts gives other findings:\n%s\n%s", direct.Out, fromFacts.Out)
	}
}

func TestCannotRun(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nix")
	os.WriteFile(bad, []byte("{ a = ; }"), 0o644)
	badFacts := filepath.Join(dir, "facts.json")
	os.WriteFile(badFacts, []byte(`{"version": 1, "nodes": [{"name": "x", "podRoles": {"roles": {"r": {"replicas": "two"}}}}]}`), 0o644)
	noRoles := filepath.Join(dir, "no-roles.json")
	os.WriteFile(noRoles, []byte(`{"version": 1, "nodes": [{"name": "x", "units": {}}]}`), 0o644)
	emptyFacts := filepath.Join(dir, "empty.json")
	os.WriteFile(emptyFacts, []byte(`{"version": 1, "nodes": []}`), 0o644)
	// A nix older than any the tests cover: refused on its version alone.
	oldNix := filepath.Join(dir, "old-nix")
	os.WriteFile(oldNix, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo 'nix (Nix) 2.3.16' && exit 0\nexit 1\n"), 0o755)
	// Another file of the same node.
	dup := filepath.Join(dir, "mastodon-again.nix")
	if data, err := os.ReadFile(examples[0]); err != nil || os.WriteFile(dup, data, 0o644) != nil {
		t.Fatal(err)
	}
	// Commands that are no nix: one that prints another tool's version,
	// one that fails saying nothing.
	cat := filepath.Join(dir, "cat")
	os.WriteFile(cat, []byte("#!/bin/sh\necho 'cat (GNU coreutils) 9.1'; echo 'Copyright'\n"), 0o755)
	silent := filepath.Join(dir, "false")
	os.WriteFile(silent, []byte("#!/bin/sh\nexit 1\n"), 0o755)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"check", "--nix", cat, examples[0]}, "podroles check: --nix " + cat + ": `" + cat + " --version` printed \"cat (GNU coreutils) 9.1\", which is no nix; give --nix PATH to nix 2.8 or later\n"},
		{[]string{"check", "--nix", silent, examples[0]}, "podroles check: --nix " + silent + ": `" + silent + " --version` failed (exit status 1) and printed nothing; give --nix PATH to nix 2.8 or later\n"},
		{[]string{"check", "--bogus"}, "podroles check: unknown flag: --bogus (see podroles check --help)"},
		{[]string{"check"}, "podroles check: no nodes given: name them with --flake REF#NODE, --file NODE.nix or --facts FACTS.json"},
		{[]string{"check", "--format", "xml", examples[0]}, `podroles check: --format "xml": want one of text, json, junit`},
		{[]string{"check", "missing.nix"}, "podroles check: file missing.nix: no such file"},
		{[]string{"check", "--facts", "missing.json"}, "podroles check: facts missing.json: no such file"},
		{[]string{"facts", bad}, "podroles facts: eval file " + bad + ": syntax error"},
		{[]string{"check", "--nix", "no-such-nix", examples[0]}, "podroles check: no-such-nix not found: install Nix (Debian: apt-get install nix-bin"},
		{[]string{"check", "--nix", oldNix, examples[0]}, "podroles check: " + oldNix + " is nix 2.3.16, older than 2.8, the oldest nix podroles is tested on: upgrade nix or give --nix PATH to nix 2.8 or later\n"},
		{[]string{"check", examples[0], examples[0]}, "podroles check: node mastodon is given twice (file:" + examples[0] + "): give each node once\n"},
		{[]string{"check", examples[0], "./" + examples[0]}, "podroles check: node mastodon is given twice (file:./" + examples[0] + "): give each node once\n"},
		{[]string{"check", examples[0], dup}, "podroles check: node mastodon comes from both file:" + examples[0] + " and file:" + dup + ": give each node once\n"},
		{[]string{"facts", "--flake", "#x"}, `podroles facts: flake "#x": empty flake reference`},
		{[]string{"check", "--facts", emptyFacts}, "podroles check: facts " + emptyFacts + " gave no nodes"},
		// Flags are refused before any evaluation.
		{[]string{"check", "--jobs", "0", examples[0]}, `podroles check: invalid argument "0" for "-j, --jobs" flag: 0: give 1 or more`},
		{[]string{"check", "-j", "-1", examples[0]}, `podroles check: invalid argument "-1" for "-j, --jobs" flag: -1: give 1 or more`},
		{[]string{"check", "--timeout", "-1s", examples[0]}, `podroles check: invalid argument "-1s" for "--timeout" flag: -1s is negative`},
		{[]string{"check", "-o", filepath.Join(dir, "no", "r.json"), examples[0]}, "podroles check: output " + filepath.Join(dir, "no", "r.json") + ": folder " + filepath.Join(dir, "no") + " does not exist"},
		{[]string{"check", "-o", dir, examples[0]}, "podroles check: output " + dir + ": is a folder; name a file in it"},
		{[]string{"check", "--nix", dir, examples[0]}, "podroles check: --nix " + dir + ": is a folder, not the nix command"},
		{[]string{"check", "--flake", "testdata"}, "podroles check: flake testdata: the folder testdata has no flake.nix, and nix would read testdata as the flake registry's entry; name a node file in it with --file testdata/NAME.nix, or the registry's entry as flake:testdata"},
		{[]string{"check", "--file", "/dev/stdin"}, "podroles check: file /dev/stdin: is no regular file (a pipe, a device): nix reads a node by its path"},
		{[]string{"check", "--fiel", examples[0]}, "podroles check: unknown flag: --fiel; did you mean --file? (see podroles check --help)"},
		{[]string{"rules", "explain"}, "podroles rules explain: name a rule by its ID or name, e.g. podroles rules explain PR101"},
		{[]string{"plan", "--namespace", "Not_A_Label", examples[0]}, `podroles plan: --namespace "Not_A_Label": a lowercase RFC 1123 label`},
		{[]string{"plan", "--service-image", "lldpa=lldap:1", examples[1]}, "podroles plan: --service-image lldpa=lldap:1: no role runs service lldpa; the roles run "},
	}
	for _, c := range cases {
		r := run(t, c.args...)
		if r.Code != cli.ExitCantRun || !strings.HasPrefix(r.ErrOut, c.want) || strings.Count(r.ErrOut, "\n") != 1 || r.Out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and one line starting %q", c.args, r.Code, r.Out, r.ErrOut, c.want)
		}
	}
	// A facts document's node of the wrong type is a node that failed:
	// in the report, and one line on stderr.
	for doc, want := range map[string]string{
		badFacts: `node x (facts:` + badFacts + `): fediversity.podRoles.roles.r.replicas: want an integer, got the string "two"`,
		noRoles:  "node x (facts:" + noRoles + "): podRoles: missing",
	} {
		r := run(t, "check", "--facts", doc)
		if r.Code != cli.ExitCantRun || !strings.HasPrefix(r.ErrOut, "podroles check: "+want) || strings.Count(r.ErrOut, "\n") != 1 || !strings.Contains(r.Out, "1 not evaluated") {
			t.Errorf("%s: exit %d, stdout %q, stderr:\n%s\nwant %q", doc, r.Code, r.Out, r.ErrOut, want)
		}
	}
}

func TestOutputKeepsOldFileOnFailure(t *testing.T) {
	out := filepath.Join(t.TempDir(), "report.json")
	os.WriteFile(out, []byte("previous report"), 0o644)
	if r := run(t, "check", "--output", out, "--format", "json", "missing.nix"); r.Code != cli.ExitCantRun {
		t.Fatalf("exit %d", r.Code)
	}
	if data, _ := os.ReadFile(out); string(data) != "previous report" {
		t.Errorf("a failed run changed the report file: %q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Errorf("a failed run left files: %v", entries)
	}
}

func TestRulesLists(t *testing.T) {
	r := run(t, "rules")
	if r.Code != cli.ExitOK {
		t.Fatal(r.ErrOut)
	}
	for _, rule := range checks.Rules() {
		if !strings.Contains(r.Out, rule.ID+"  "+rule.Name) {
			t.Errorf("rules lacks %s", rule.ID)
		}
	}
}

// rules explain prints each rule's whole text, found by ID in any case or
// by name, folded for a terminal.
func TestRulesExplain(t *testing.T) {
	for _, rule := range checks.Rules() {
		r := run(t, "rules", "explain", rule.ID)
		if r.Code != cli.ExitOK || r.ErrOut != "" {
			t.Fatalf("explain %s: exit %d\n%s", rule.ID, r.Code, r.ErrOut)
		}
		if head := rule.ID + " " + rule.Name + ": " + string(rule.Severity) + "\nSpec: " + rule.Spec + "\nApplies to: " + rule.Scope.String() + "\n\n"; !strings.HasPrefix(r.Out, head) {
			t.Errorf("explain %s begins\n%s\nwant %q", rule.ID, r.Out[:min(len(r.Out), 200)], head)
		}
		if !strings.Contains(r.Out, "\nFix: ") {
			t.Errorf("explain %s lacks the fix:\n%s", rule.ID, r.Out)
		}
		for _, line := range strings.Split(r.Out, "\n") {
			if len(line) > 78 && strings.Contains(line, " ") {
				t.Errorf("explain %s: a line of %d characters: %s", rule.ID, len(line), line)
			}
		}
		// The same words as the registry's text, only folded.
		if got, want := strings.Fields(r.Out), strings.Fields(rule.Long()); !slices.Equal(got[len(got)-len(want):], want) {
			t.Errorf("explain %s does not end in the rule's long text", rule.ID)
		}
	}
	both := run(t, "rules", "explain", "pr101", "unit-in-two-lists")
	if both.Code != cli.ExitOK || !strings.HasPrefix(both.Out, "PR101 unknown-unit: ") || !strings.Contains(both.Out, "\n\nPR102 unit-in-two-lists: ") {
		t.Errorf("explain pr101 unit-in-two-lists: exit %d\n%s", both.Code, both.Out)
	}
	all := checks.Rules()
	for _, args := range [][]string{{"rules", "explain", "PR999"}, {"rules", "explain", "PR101", "nope"}} {
		r := run(t, args...)
		want := `podroles rules explain: no rule "` + args[len(args)-1] + `": the rules are ` + all[0].ID + " to " + all[len(all)-1].ID + " (podroles rules lists them)" + "\n"
		if r.Code != cli.ExitCantRun || r.ErrOut != want || r.Out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q, want exit 2 and %q", args, r.Code, r.Out, r.ErrOut, want)
		}
	}
	if r := run(t, "rules", "explain"); r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "name a rule by its ID or name") {
		t.Errorf("explain without an ID: exit %d, %q", r.Code, r.ErrOut)
	}
}

// TestCheckGitHubAndSARIF: the two formats of CI on a broken example, each
// finding at its file and line, with the exit code of the check.
func TestCheckGitHubAndSARIF(t *testing.T) {
	example, _ := filepath.Abs(repo("examples/broken/mastodon-renamed.nix"))
	r := run(t, "check", "--format", "github", example)
	if r.Code != cli.ExitFailed {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "::error file="+example+",line=13,col=66,title=PR101::node mastodon, unit mastodon-sidekiq-all: ") ||
		!strings.HasPrefix(lines[4], "::warning file=") || lines[5] != "1 node checked: 4 errors, 1 warning: failed" {
		t.Errorf("--format github:\n%s", r.Out)
	}

	out := filepath.Join(t.TempDir(), "check.sarif")
	r = run(t, "check", "--format", "sarif", "--output", out, example)
	if r.Code != cli.ExitFailed || !strings.Contains(r.Out, example+":13:66: error PR101") {
		t.Fatalf("exit %d; the text report goes to the log:\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string
		Runs    []struct {
			Results []struct {
				RuleID    string
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine, StartColumn int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(data, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 5 {
		t.Fatalf("SARIF %v:\n%s", err, data)
	}
	first := log.Runs[0].Results[0]
	if loc := first.Locations[0].PhysicalLocation; first.RuleID != "PR101" || loc.ArtifactLocation.URI != "file://"+example || loc.Region.StartLine != 13 || loc.Region.StartColumn != 66 {
		t.Errorf("first result %+v", first)
	}
}

// The run functions take their options and streams, and need no cobra:
// check's refusal, as a caller of the package sees it.
func TestRunWithoutCobra(t *testing.T) {
	var out, errOut bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	nix := cli.SourceOptions{Nix: nixtest.Nix(t)}
	err := RunCheck(context.Background(), &CheckOptions{IO: io, Sources: nix, Args: []string{repo("examples/broken/mastodon-renamed.nix")}, Format: "text"})
	var failed *cli.FailedError
	if !errors.As(err, &failed) || failed.Summary != "4 errors, 1 warnings" || !strings.Contains(out.String(), "PR101") {
		t.Errorf("check of the broken example: %v\n%s", err, out.String())
	}
}

// inRepoRoot runs the test in the repository's root, as a user runs check
// there, and returns the golden files' folder and the root. Annotations'
// paths follow GITHUB_WORKSPACE, which is cleared.
func inRepoRoot(t *testing.T) (testdata, root string) {
	t.Helper()
	testdata, err := filepath.Abs("testdata/check")
	if err != nil {
		t.Fatal(err)
	}
	root, err = filepath.Abs(repo("."))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_WORKSPACE", "")
	t.Chdir(root)
	return testdata, root
}

// TestGoldenCheckReports: every format of check's report, on the bundled
// examples (one broken, with locations and notes; two that pass), is in
// testdata/check; make docs rewrites it. The check runs in the
// repository's root, as a user runs it there, so that files are shown as
// a user sees them; what varies from machine to machine is replaced by
// name: the root's absolute path (SARIF's base) by $REPO.
func TestGoldenCheckReports(t *testing.T) {
	testdata, root := inRepoRoot(t)
	examples := []string{"examples/broken/mastodon-renamed.nix", "examples/directory.nix", "examples/mastodon-vm.nix"}
	for _, format := range report.LocatedFormats {
		t.Run(format, func(t *testing.T) {
			r := run(t, append([]string{"check", "--format", format}, examples...)...)
			if r.Code != cli.ExitFailed || r.ErrOut != "" {
				t.Fatalf("exit %d, want 1\n%s", r.Code, r.ErrOut)
			}
			golden.Check(t, filepath.Join(testdata, "broken-and-passing."+format), []byte(strings.ReplaceAll(r.Out, root, "$REPO")))
		})
	}
}

// TestTextReportQuotesNames: a name with a newline or an escape sequence
// neither splits the text report nor reaches the terminal raw.
func TestTextReportQuotesNames(t *testing.T) {
	facts := filepath.Join(t.TempDir(), "facts.json")
	os.WriteFile(facts, []byte(`{"version": 1, "nodes": [{"name": "n", "units": {"web": {"enable": true}},
	  "podRoles": {"roles": {"w": {"replicas": 1}}, "mainUnits": ["evil\nPASSED all good\u001b[2J"], "sharedUnits": [], "services": {}}}]}`), 0o644)
	r := run(t, "check", "--facts", facts)
	if r.Code != cli.ExitFailed || strings.ContainsAny(r.Out, "\x1b") || strings.Count(r.Out, "\n") != 3 ||
		!strings.Contains(r.Out, `error   PR101 unit "evil\nPASSED all good\x1b[2J" [FR-008, US2-1]: mainUnits lists unit evil\nPASSED all good\x1b[2J,`) {
		t.Errorf("exit %d:\n%s", r.Code, r.Out)
	}
}

// TestGoldenCheckReportsWithAnUnevaluatedNode: a node that nix cannot
// evaluate is reported among the others in every format, which are
// checked as usual; the exit status is 2 and stderr has its one line.
// (As TestGoldenCheckReports, in the repository's root.)
func TestGoldenCheckReportsWithAnUnevaluatedNode(t *testing.T) {
	testdata, root := inRepoRoot(t)
	forum := "cmd/internal/nodecmd/testdata/nodes/forum.nix"
	nodes := []string{"examples/broken/mastodon-renamed.nix", forum, "examples/directory.nix"}
	for _, format := range report.LocatedFormats {
		t.Run(format, func(t *testing.T) {
			r := run(t, append([]string{"check", "--format", format}, nodes...)...)
			want := "podroles check: eval file " + forum + ": syntax error, unexpected ';' (at " + forum + ":5:46)\n"
			if r.Code != cli.ExitCantRun || r.ErrOut != want {
				t.Fatalf("exit %d, want 2; stderr:\n%s\nwant:\n%s", r.Code, r.ErrOut, want)
			}
			golden.Check(t, filepath.Join(testdata, "one-unevaluated."+format), []byte(strings.ReplaceAll(r.Out, root, "$REPO")))
		})
	}
}

// TestUnevaluatedNodes: every node that nix cannot evaluate is reported,
// beside the nodes it could; podroles facts and plan, which need every
// node, refuse, naming each.
func TestUnevaluatedNodes(t *testing.T) {
	dir := t.TempDir()
	var bad []string
	for _, name := range []string{"a", "b"} {
		p := filepath.Join(dir, name+".nix")
		os.WriteFile(p, []byte("{ a = ; }"), 0o644)
		bad = append(bad, p)
	}
	args := append([]string{examples[1]}, bad...)
	r := run(t, append([]string{"check"}, args...)...)
	if r.Code != cli.ExitCantRun || strings.Count(r.ErrOut, "\n") != 2 ||
		!strings.Contains(r.Out, "a (file:"+bad[0]+"): evaluation failed: syntax error") || !strings.Contains(r.Out, "b (file:"+bad[1]+"): evaluation failed: syntax error") ||
		!strings.HasSuffix(r.Out, "1 node checked, 2 not evaluated: 0 errors, 0 warnings: failed\n") {
		t.Errorf("check: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	out := filepath.Join(dir, "check.json")
	r = run(t, append([]string{"check", "--format", "json", "-o", out}, args...)...)
	var rep checks.Report
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &rep); r.Code != cli.ExitCantRun || err != nil || len(rep.Nodes) != 1 || len(rep.EvalErrors) != 2 {
		t.Errorf("check -o: exit %d, %v\n%s", r.Code, err, data)
	}
	for _, cmd := range []string{"facts", "plan"} {
		r := run(t, append([]string{cmd}, args...)...)
		if r.Code != cli.ExitCantRun || r.Out != "" || strings.Count(r.ErrOut, "\n") != 2 ||
			!strings.Contains(r.ErrOut, "podroles "+cmd+": eval file "+bad[0]+": syntax error") || !strings.Contains(r.ErrOut, "podroles "+cmd+": eval file "+bad[1]+": syntax error") {
			t.Errorf("%s: exit %d, stdout %q\n%s", cmd, r.Code, r.Out, r.ErrOut)
		}
	}
}

// TestCheckRefusesFilesThatAreNoNode: a flake's flake.nix given as a file,
// and a file that sets nothing of the node surface, no longer pass with
// "0 rules run": each is an evaluation error that says what it is.
func TestCheckRefusesFilesThatAreNoNode(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "flake.nix"), []byte(`{ outputs = { self }: { nixosConfigurations = { }; }; }`), 0o644)
	os.WriteFile(filepath.Join(dir, "empty.nix"), []byte(`{ }`), 0o644)
	t.Chdir(dir)
	for _, c := range []struct{ args []string }{{[]string{"check", "flake.nix"}}, {[]string{"check", "--file", "flake.nix"}}} {
		r := run(t, c.args...)
		want := "podroles check: eval file flake.nix: flake.nix is a flake (it has outputs), not a node: check its nodes with --flake ., or one of them with --flake .#NODE\n"
		if r.Code != cli.ExitCantRun || r.ErrOut != want || !strings.Contains(r.Out, "flake (file:flake.nix): evaluation failed: flake.nix is a flake") {
			t.Errorf("%q: exit %d\n%s%s", c.args, r.Code, r.Out, r.ErrOut)
		}
	}
	if r := run(t, "check", "empty.nix"); r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "empty.nix sets nothing of the node surface") {
		t.Errorf("empty.nix: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

// TestMistypedNodeHidesNoOther: a node whose value has the wrong type is
// reported as a node that failed, at its definition, in every format,
// and the other nodes are checked as usual; so too from facts.
func TestMistypedNodeHidesNoOther(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	node := func(name, role string) string {
		return `{ networking.hostName = "` + name + `"; systemd.services.web = { };
  fediversity.podRoles.roles.web = ` + role + `;
}
`
	}
	os.WriteFile("b.nix", []byte(node("b", `{ replicas = 2; units = [ "web" "nosuch" ]; }`)), 0o644)
	for name, role := range map[string]string{"repstr": `{ replicas = "2"; units = [ "web" ]; }`, "unitsnull": `{ replicas = 2; units = [ null ]; }`} {
		os.WriteFile(name+".nix", []byte(node(name, role)), 0o644)
		for _, format := range report.LocatedFormats {
			r := run(t, "check", "--format", format, name+".nix", "b.nix")
			if r.Code != cli.ExitCantRun || !strings.Contains(r.Out, "nosuch") || !strings.Contains(r.Out, name) ||
				!strings.Contains(r.ErrOut, "node "+name+" (file:"+name+".nix): fediversity.podRoles.roles.web.") {
				t.Errorf("%s, %s: exit %d\n%s%s", name, format, r.Code, r.Out, r.ErrOut)
			}
		}
		r := run(t, "check", name+".nix", "b.nix")
		if want := name + ".nix:2:"; !strings.Contains(r.Out, "(at "+want) {
			t.Errorf("%s: not placed at its definition (%s…):\n%s", name, want, r.Out)
		}
	}

	if r := run(t, "facts", "-o", "b.json", "b.nix"); r.Code != cli.ExitOK {
		t.Fatal(r.ErrOut)
	}
	data, _ := os.ReadFile("b.json")
	mistyped := strings.Replace(strings.Replace(string(data), `"replicas": 2`, `"replicas": "2"`, 1), `"name": "b"`, `"name": "c"`, 1)
	os.WriteFile("c.json", []byte(mistyped), 0o644)
	r := run(t, "check", "--facts", "c.json", "--facts", "b.json")
	if r.Code != cli.ExitCantRun || !strings.Contains(r.Out, "nosuch") || !strings.Contains(r.Out, `c (file:b.nix): evaluation failed: fediversity.podRoles.roles.web.replicas: want an integer, got the string "2" (at c.json)`) {
		t.Errorf("facts: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

// TestRulesList: rules list is the table of rules, as scenarios list is
// the table of scenarios.
func TestRulesList(t *testing.T) {
	list, rules := run(t, "rules", "list"), run(t, "rules")
	if list.Code != cli.ExitOK || list.Out != rules.Out || !strings.Contains(list.Out, "PR101") {
		t.Errorf("exit %d\n%s%s", list.Code, list.Out, list.ErrOut)
	}
}

// TestTMPDIRNamed: a TMPDIR that cannot hold the run's folder is named,
// with what to do.
func TestTMPDIRNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	t.Setenv("TMPDIR", missing)
	r := run(t, "check", examples[0])
	if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "TMPDIR "+missing+": no such file or directory; set TMPDIR") {
		t.Errorf("exit %d\n%s", r.Code, r.ErrOut)
	}
}
