package checks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/nixtest"
)

// awkward is a report whose strings hold what workflow commands and SARIF
// must escape: commas and colons in file names, percent signs, line ends,
// and "::" in messages.
func awkward() *checks.Report {
	at := func(file string, line, col int) *facts.Location {
		return &facts.Location{File: file, Line: line, Column: col}
	}
	res := &checks.Result{Node: "web,1", Source: "file:x.nix", Findings: []checks.Finding{
		{
			Rule: "PR101", Spec: "FR-008, US2-1", Severity: checks.SeverityError, Node: "web,1",
			Subject:  checks.Subject{Kind: checks.SubjectUnit, Name: "a:b"},
			Message:  "100% wrong::\nsecond line\r, third",
			Location: at("hosts/a,b:c d%.nix", 42, 7),
			Notes:    []checks.Note{{Message: "also: here, 50%", Location: at("/abs/base.nix", 3, 1)}, {Message: "nowhere"}},
		},
		{
			Rule: "PR104", Spec: "FR-006", Severity: checks.SeverityWarning, Node: "web,1",
			Subject: checks.Subject{Kind: checks.SubjectUnit, Name: "acme-x"}, Message: "no location at all",
		},
		{
			Rule: "PR202", Spec: "US2-3", Severity: checks.SeverityError, Node: "web,1",
			Subject: checks.Subject{Kind: checks.SubjectRole, Name: "2fa"}, Message: "file only",
			Location: at("hosts/web.nix", 0, 0),
		},
	}}
	rep := checks.NewReport([]*checks.Result{res}, false)
	rep.ToolVersion, rep.Base = "test", "/work tree/repo"
	return rep
}

// command is a workflow command read back as the runner reads it
// (actions/runner's ActionCommand: "::" NAME [" " KEY=VALUE{,KEY=VALUE}]
// "::" DATA, with the escapes undone, %25 last).
type command struct {
	name  string
	props map[string]string
	data  string
}

func parseCommand(line string) (command, bool) {
	rest, ok := strings.CutPrefix(line, "::")
	if !ok {
		return command{}, false
	}
	info, data, ok := strings.Cut(rest, "::")
	if !ok {
		return command{}, false
	}
	c := command{props: map[string]string{}, data: unescape(data, false)}
	name, props, _ := strings.Cut(info, " ")
	c.name = name
	if props != "" {
		for _, kv := range strings.Split(props, ",") {
			k, v, _ := strings.Cut(kv, "=")
			c.props[k] = unescape(v, true)
		}
	}
	return c, true
}

func unescape(s string, property bool) string {
	s = strings.ReplaceAll(s, "%0D", "\r")
	s = strings.ReplaceAll(s, "%0A", "\n")
	if property {
		s = strings.ReplaceAll(s, "%3A", ":")
		s = strings.ReplaceAll(s, "%2C", ",")
	}
	return strings.ReplaceAll(s, "%25", "%")
}

// TestGitHubFormatReadsBack writes findings as workflow commands and reads
// them back as the runner does: each finding one annotation with its file,
// line, column, rule and whole message, nothing more.
func TestGitHubFormatReadsBack(t *testing.T) {
	rep := awkward()
	var out bytes.Buffer
	if err := rep.Write(&out, "github"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var got []command
	for _, line := range lines {
		if c, ok := parseCommand(line); ok {
			got = append(got, c)
		} else if line != "1 node checked: 2 errors, 1 warning: failed" {
			t.Errorf("a line that is no command and no summary: %q", line)
		}
	}
	findings := rep.Nodes[0].Findings
	if len(got) != len(findings) {
		t.Fatalf("%d commands for %d findings:\n%s", len(got), len(findings), out.String())
	}
	for i, f := range findings {
		c := got[i]
		wantProps := map[string]string{"title": f.Rule}
		if f.Location != nil {
			wantProps["file"] = f.Location.File
			if f.Location.Line > 0 {
				wantProps["line"] = strconv.Itoa(f.Location.Line)
				wantProps["col"] = strconv.Itoa(f.Location.Column)
			}
		}
		if c.name != string(f.Severity) || fmt.Sprint(c.props) != fmt.Sprint(wantProps) {
			t.Errorf("finding %d: ::%s %v, want ::%s %v", i, c.name, c.props, f.Severity, wantProps)
		}
		if !strings.HasPrefix(c.data, fmt.Sprintf("node %s, %s: %s [%s]", f.Node, f.Subject, f.Message, f.Spec)) {
			t.Errorf("finding %d: message %q lost or changed", i, c.data)
		}
		for _, n := range f.Notes {
			if !strings.Contains(c.data, "\nnote: ") || !strings.Contains(c.data, n.Message) {
				t.Errorf("finding %d: note %q missing from %q", i, n.Message, c.data)
			}
		}
	}
}

// sarifSchema compiles the SARIF 2.1.0 schema of OASIS (testdata/sarif).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../testdata/sarif/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("sarif-schema-2.1.0.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

func validSARIF(t *testing.T, schema *jsonschema.Schema, rep *checks.Report) map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := rep.Write(&out, "sarif"); err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v\n%s", err, out.String())
	}
	var log map[string]any
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestSARIFIsValid validates --format sarif against the SARIF 2.1.0 schema
// of OASIS, for awkward strings and for the findings of every fixture with
// their locations, and reads back what GitHub's code scanning reads.
func TestSARIFIsValid(t *testing.T) {
	schema := sarifSchema(t)
	log := validSARIF(t, schema, awkward())

	run := log["runs"].([]any)[0].(map[string]any)
	driver := run["tool"].(map[string]any)["driver"].(map[string]any)
	rules := driver["rules"].([]any)
	if driver["name"] != "podroles" || driver["version"] != "test" || len(rules) != len(checks.Rules()) {
		t.Errorf("driver %v with %d rules", driver["name"], len(rules))
	}
	for i, r := range checks.Rules() {
		got := rules[i].(map[string]any)
		props := got["properties"].(map[string]any)
		if got["id"] != r.ID || got["name"] != r.Name || got["shortDescription"].(map[string]any)["text"] != r.Doc || props["spec"] != r.Spec {
			t.Errorf("rule %d = %v, want %s %s", i, got, r.ID, r.Name)
		}
	}
	if base := run["originalUriBaseIds"].(map[string]any)["%SRCROOT%"].(map[string]any)["uri"]; base != "file:///work%20tree/repo/" {
		t.Errorf("%%SRCROOT%% = %v", base)
	}
	results := run["results"].([]any)
	first := results[0].(map[string]any)
	loc := first["locations"].([]any)[0].(map[string]any)["physicalLocation"].(map[string]any)
	artifact, region := loc["artifactLocation"].(map[string]any), loc["region"].(map[string]any)
	if artifact["uri"] != "hosts/a,b:c%20d%25.nix" || artifact["uriBaseId"] != "%SRCROOT%" || region["startLine"] != 42.0 || region["startColumn"] != 7.0 {
		t.Errorf("first result at %v %v", artifact, region)
	}
	if first["ruleId"] != "PR101" || int(first["ruleIndex"].(float64)) != 0 || first["level"] != "error" {
		t.Errorf("first result %v %v %v", first["ruleId"], first["ruleIndex"], first["level"])
	}
	related := first["relatedLocations"].([]any)
	if len(related) != 1 {
		t.Errorf("related locations %v: want the note that has a place", related)
	}

	// The schema is no formality: a level SARIF does not know fails it.
	first["level"] = "severe"
	broken, _ := json.Marshal(log)
	if inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(broken)); err != nil || schema.Validate(inst) == nil {
		t.Error("the schema accepts a result of level \"severe\"")
	}

	nixtest.Nix(t)
	fixtures, _ := allFixtures(t)
	validSARIF(t, schema, checks.NewReport(checkFixtures(t, fixtures), false))
}
