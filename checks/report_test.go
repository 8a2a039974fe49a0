package checks_test

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/report"
)

// unevaluated is a report of three nodes: one checked, one that nix
// failed on at a place of its file, and a flake whose nodes nix could not
// list, with no place.
func unevaluated() *checks.Report {
	checked := &checks.Result{Node: "web", Source: "file:web.nix", RulesRun: []string{"PR101"}, Findings: []checks.Finding{}}
	rep := checks.NewReport([]*checks.Result{checked}, false,
		checks.EvalFailure{Node: "db", Source: "file:hosts/db,1.nix", Message: "syntax error, unexpected ';'",
			Location: &facts.Location{File: "hosts/db,1.nix", Line: 3, Column: 24}},
		checks.EvalFailure{Source: "flake:path:/src/other", Message: "podroles: flake path:/src/other has no nixosConfigurations"},
	)
	rep.ToolVersion, rep.Base = "test", "/src/repo"
	return rep
}

func write(t *testing.T, rep *checks.Report, format string) string {
	t.Helper()
	var out bytes.Buffer
	if err := rep.Write(&out, format); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestEvalFailuresInEveryFormat: a node that nix could not evaluate is an
// error of its own in every format, among the nodes checked, and fails
// the report.
func TestEvalFailuresInEveryFormat(t *testing.T) {
	rep := unevaluated()
	if rep.Summary.Passed || rep.Summary.Nodes != 1 || rep.Summary.EvalErrors != 2 {
		t.Errorf("summary %+v", rep.Summary)
	}

	text := write(t, rep, "text")
	want := "flake:path:/src/other: evaluation failed: podroles: flake path:/src/other has no nixosConfigurations\n" +
		"node db (file:hosts/db,1.nix): evaluation failed: syntax error, unexpected ';' (at hosts/db,1.nix:3:24)\n" +
		"node web (file:web.nix, not on k8s-pod.nix): ok, 1 rule run\n" +
		"1 node checked, 2 not evaluated: 0 errors, 0 warnings: failed\n"
	if text != want {
		t.Errorf("text:\n%s\nwant:\n%s", text, want)
	}

	var doc struct {
		Version    int
		Summary    struct{ Nodes, EvalErrors int }
		EvalErrors []checks.EvalFailure
	}
	if err := json.Unmarshal([]byte(write(t, rep, "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != 2 || doc.Summary.EvalErrors != 2 || len(doc.EvalErrors) != 2 || doc.EvalErrors[1].Node != "db" || doc.EvalErrors[1].Location.Line != 3 {
		t.Errorf("json: %+v", doc)
	}

	var suites report.Suites
	if err := xml.Unmarshal([]byte(write(t, rep, "junit")), &suites); err != nil {
		t.Fatal(err)
	}
	if suites.Errors != 2 || len(suites.Suites) != 3 {
		t.Fatalf("junit: %d errors in %d suites", suites.Errors, len(suites.Suites))
	}
	db := suites.Suites[1]
	if c := db.Cases[0]; db.Name != "db" || db.Errors != 1 || c.Error == nil || c.File != "hosts/db,1.nix" || c.Line != 3 ||
		!strings.Contains(c.Error.Text, "syntax error, unexpected ';' (at hosts/db,1.nix:3:24)") {
		t.Errorf("junit suite of db: %+v", db)
	}

	var commands []command
	for _, line := range strings.Split(strings.TrimSpace(write(t, rep, "github")), "\n") {
		if c, ok := parseCommand(line); ok {
			commands = append(commands, c)
		}
	}
	if len(commands) != 2 || commands[1].name != "error" || commands[1].props["file"] != "hosts/db,1.nix" || commands[1].props["line"] != "3" ||
		commands[1].data != "node db (file:hosts/db,1.nix): evaluation failed: syntax error, unexpected ';'" {
		t.Errorf("github: %+v", commands)
	}

	log := validSARIF(t, sarifSchema(t), rep)
	run := log["runs"].([]any)[0].(map[string]any)
	results := run["results"].([]any)
	invocation := run["invocations"].([]any)[0].(map[string]any)
	notifications := invocation["toolExecutionNotifications"].([]any)
	if len(results) != 2 || results[1].(map[string]any)["ruleId"] != "eval" || invocation["executionSuccessful"] != false || len(notifications) != 2 {
		t.Errorf("sarif: results %v, invocation %v", results, invocation)
	}
}

// TestNoRuleRanSaysWhy: a node that no rule applies to passes, and its
// line (in text) and a notice (in github) say why.
func TestNoRuleRanSaysWhy(t *testing.T) {
	n := &facts.Node{Name: "web", Source: "file:web.nix", Units: map[string]facts.Unit{"web": {Enable: true}}}
	rep := checks.NewReport(checks.Check([]*facts.Node{n}), false)
	why := "(FR-008: the node has no request and is not on k8s-pod.nix)"
	if text := write(t, rep, "text"); !strings.HasPrefix(text, "node web (file:web.nix, not on k8s-pod.nix): ok, 0 rules run "+why+"\n") || !rep.Summary.Passed {
		t.Errorf("text:\n%s", text)
	}
	if gh := write(t, rep, "github"); !strings.HasPrefix(gh, "::notice title=no rule ran::node web (file:web.nix): no rule ran "+why+"\n") {
		t.Errorf("github:\n%s", gh)
	}
}

// TestTextStartsNoLineWithAName: a hostName or a file name that is a
// GitHub workflow command cannot start a line of the text report.
func TestTextStartsNoLineWithAName(t *testing.T) {
	evil := "::error file=x::pwned"
	res := &checks.Result{Node: evil, Source: "file:" + evil + ".nix", RulesRun: []string{"PR101"}, Skipped: []checks.Skip{}, Findings: []checks.Finding{
		{Rule: "PR101", Severity: checks.SeverityError, Node: evil, Subject: checks.Subject{Kind: checks.SubjectUnit, Name: "u"}, Message: "m", Location: &facts.Location{File: evil + ".nix", Line: 1, Column: 2},
			Notes: []checks.Note{{Message: "n", Location: &facts.Location{File: evil + ".nix", Line: 3}}}},
	}}
	rep := checks.NewReport([]*checks.Result{res}, false, checks.EvalFailure{Node: evil, Source: "file:" + evil + ".nix", Message: "bad"})
	text := write(t, rep, "text")
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "::") {
			t.Errorf("a line starts with a workflow command: %q", line)
		}
	}
	if !strings.Contains(text, "./::error file=x::pwned.nix:1:2: error PR101") {
		t.Errorf("the finding's place:\n%s", text)
	}
}

// TestNodeNamedOnce: a finding about the node itself names it once.
func TestNodeNamedOnce(t *testing.T) {
	res := &checks.Result{Node: "Web_01", Source: "file:w.nix", RulesRun: []string{"PR608"}, Skipped: []checks.Skip{}, Findings: []checks.Finding{
		{Rule: "PR608", Severity: checks.SeverityError, Node: "Web_01", Subject: checks.Subject{Kind: checks.SubjectNode, Name: "Web_01"}, Message: "m"},
	}}
	rep := checks.NewReport([]*checks.Result{res}, false)
	for _, format := range []string{"github", "sarif"} {
		if out := write(t, rep, format); strings.Contains(out, "node Web_01, node Web_01") || !strings.Contains(out, "node Web_01: m") {
			t.Errorf("%s:\n%s", format, out)
		}
	}
}
