package checks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/fediversity/podroles/report"
)

// ReportVersion is the version of the JSON report.
const ReportVersion = 1

// Report is the outcome of checking nodes, as the check command prints it.
type Report struct {
	Version int       `json:"version"`
	Strict  bool      `json:"strict"`
	Summary Summary   `json:"summary"`
	Nodes   []*Result `json:"nodes"`

	// ToolVersion is podroles' version, for SARIF.
	ToolVersion string `json:"-"`
	// Base is the absolute folder that relative files of locations are
	// relative to (see Locate), for SARIF; "" when unknown.
	Base string `json:"-"`
}

// Summary counts what a report found.
type Summary struct {
	Nodes    int `json:"nodes"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	// Passed is false when an error was found, or with strict a warning.
	Passed bool `json:"passed"`
}

// NewReport sums up results. With strict, warnings fail the check too.
func NewReport(results []*Result, strict bool) *Report {
	r := &Report{Version: ReportVersion, Strict: strict, Nodes: results}
	if r.Nodes == nil {
		r.Nodes = []*Result{}
	}
	r.Summary.Nodes = len(results)
	for _, res := range results {
		e, w := res.Count()
		r.Summary.Errors += e
		r.Summary.Warnings += w
	}
	r.Summary.Passed = r.Summary.Errors == 0 && (!strict || r.Summary.Warnings == 0)
	return r
}

// Write writes the report in format: one of report.LocatedFormats.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "github":
		return r.WriteGitHub(w)
	case "sarif":
		return r.WriteSARIF(w)
	}
	return report.Write(w, format, r)
}

// WriteText writes a line per node and a line per finding under it, then a
// summary: readable in a terminal and in a CI log. A finding with a
// location is a line in the style of compilers, which editors and CI logs
// link to the file (hosts/mastodon.nix:42:7: error PR101 unit ...), each of
// its notes one more (hosts/base.nix:12:5: note: ...).
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Nodes {
		e, wn := res.Count()
		method := "not on k8s-pod.nix"
		if res.K8sPod {
			method = "on k8s-pod.nix"
		}
		status := "ok"
		if e+wn > 0 {
			status = fmt.Sprintf("%s, %s", plural(e, "error"), plural(wn, "warning"))
		}
		fmt.Fprintf(&b, "%s (%s, %s): %s, %d rules run\n", res.Node, res.Source, method, status, len(res.RulesRun))
		for _, f := range res.Findings {
			if f.Location != nil {
				fmt.Fprintf(&b, "%s: %s %s %s [%s]: %s\n", f.Location, f.Severity, f.Rule, f.Subject, f.Spec, f.Message)
			} else {
				fmt.Fprintf(&b, "  %-7s %s %s [%s]: %s\n", f.Severity, f.Rule, f.Subject, f.Spec, f.Message)
			}
			for _, n := range f.Notes {
				if n.Location != nil {
					fmt.Fprintf(&b, "%s: note: %s\n", n.Location, n.Message)
				} else {
					fmt.Fprintf(&b, "    note: %s\n", n.Message)
				}
			}
		}
	}
	b.WriteString(r.summaryLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// summaryLine is the last line of the text report.
func (r *Report) summaryLine() string {
	verdict := "passed"
	if !r.Summary.Passed {
		verdict = "failed"
	}
	return fmt.Sprintf("%s checked: %s, %s: %s", plural(r.Summary.Nodes, "node"), plural(r.Summary.Errors, "error"), plural(r.Summary.Warnings, "warning"), verdict)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WriteJUnit writes a test suite per node with a test case per rule: a
// failure for a rule that found an error (or with strict a warning), a
// skipped case for a rule that does not apply to the node.
func (r *Report) WriteJUnit(w io.Writer) error {
	var suites []report.Suite
	for _, res := range r.Nodes {
		suite := report.Suite{Name: res.Node}
		byRule := map[string][]Finding{}
		for _, f := range res.Findings {
			byRule[f.Rule] = append(byRule[f.Rule], f)
		}
		skipped := map[string]string{}
		for _, s := range res.Skipped {
			skipped[s.Rule] = s.Reason
		}
		for _, rule := range Rules() {
			c := report.Case{Name: rule.ID + " " + rule.Name, ClassName: "podroles.check." + res.Node}
			if why, ok := skipped[rule.ID]; ok {
				c.Skipped = &report.Skipped{Message: why}
				suite.Add(c)
				continue
			}
			var lines []string
			failed := false
			for _, f := range byRule[rule.ID] {
				lines = append(lines, f.line())
				failed = failed || f.Severity == SeverityError || r.Strict
				if f.Location != nil && c.File == "" {
					c.File, c.Line = f.Location.File, f.Location.Line
				}
			}
			switch {
			case failed:
				c.Failure = &report.Failure{
					Message: fmt.Sprintf("%s [%s]: %s", rule.ID, rule.Spec, plural(len(lines), "finding")),
					Type:    rule.Name,
					Text:    strings.Join(lines, "\n"),
				}
			case len(lines) > 0:
				c.SystemOut = strings.Join(lines, "\n")
			}
			suite.Add(c)
		}
		suites = append(suites, suite)
	}
	return report.WriteJUnit(w, "podroles check", suites)
}

// line is the finding as one line of text: "FILE:LINE:COLUMN: SEVERITY
// SUBJECT: MESSAGE" when it has a location, with its notes on further lines.
func (f Finding) line() string {
	line := fmt.Sprintf("%s %s: %s", f.Severity, f.Subject, f.Message)
	if f.Location != nil {
		line = f.Location.String() + ": " + line
	}
	for _, n := range f.Notes {
		if n.Location != nil {
			line += fmt.Sprintf("\n%s: note: %s", n.Location, n.Message)
		} else {
			line += "\nnote: " + n.Message
		}
	}
	return line
}

// WriteGitHub writes each finding as a workflow command that GitHub
// Actions and Forgejo Actions show as an annotation of its file and line
// (::error file=F,line=L,col=C,title=PR101::...), then the summary line.
func (r *Report) WriteGitHub(w io.Writer) error {
	var annotations []report.Annotation
	for _, res := range r.Nodes {
		for _, f := range res.Findings {
			a := report.Annotation{Level: string(f.Severity), Title: f.Rule}
			a.Message = fmt.Sprintf("node %s, %s: %s [%s]", f.Node, f.Subject, f.Message, f.Spec)
			if f.Location != nil {
				a.File, a.Line, a.Column = f.Location.File, f.Location.Line, f.Location.Column
			}
			for _, n := range f.Notes {
				if n.Location != nil {
					a.Message += fmt.Sprintf("\nnote: %s: %s", n.Location, n.Message)
				} else {
					a.Message += "\nnote: " + n.Message
				}
			}
			annotations = append(annotations, a)
		}
	}
	return report.WriteGitHub(w, annotations, r.summaryLine())
}

// WriteSARIF writes the report as a SARIF 2.1.0 log: every rule with its
// ID, name, doc and spec items as metadata, every finding as a result at
// its location, its notes as related locations.
func (r *Report) WriteSARIF(w io.Writer) error {
	var rules []report.SARIFRule
	for _, rule := range Rules() {
		tags := []string{"pod-roles"}
		for _, item := range strings.Split(rule.Spec, ",") {
			tags = append(tags, strings.TrimSpace(item))
		}
		rules = append(rules, report.SARIFRule{
			ID: rule.ID, Name: rule.Name, Description: rule.Doc, Level: string(rule.Severity), Tags: tags,
			Help:       fmt.Sprintf("%s\n\nSpec: %s (pod-roles.spec.txt). Applies to %s. `podroles rules` lists every rule.", rule.Doc, rule.Spec, rule.Scope),
			Properties: map[string]any{"spec": rule.Spec, "appliesTo": rule.Scope.String()},
		})
	}
	results := []report.SARIFResult{}
	for _, res := range r.Nodes {
		for _, f := range res.Findings {
			out := report.SARIFResult{
				RuleID: f.Rule, Level: string(f.Severity),
				Message:     fmt.Sprintf("node %s, %s: %s", f.Node, f.Subject, f.Message),
				Fingerprint: fingerprint(f),
				Properties:  map[string]any{"node": f.Node, "subjectKind": string(f.Subject.Kind), "subject": f.Subject.Name, "spec": f.Spec},
			}
			if f.Location != nil {
				out.Location = &report.SARIFLocation{File: f.Location.File, Line: f.Location.Line, Column: f.Location.Column}
			}
			for _, n := range f.Notes {
				if n.Location != nil {
					out.Related = append(out.Related, report.SARIFLocation{File: n.Location.File, Line: n.Location.Line, Column: n.Location.Column, Message: n.Message})
				}
			}
			results = append(results, out)
		}
	}
	return report.WriteSARIF(w, report.SARIFTool{Name: "podroles", Version: r.ToolVersion}, r.Base, rules, results)
}

// fingerprint identifies a finding by what it is about, not where: the
// same finding keeps it when lines move.
func fingerprint(f Finding) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Node, f.Rule, string(f.Subject.Kind), f.Subject.Name}, "\x00")))
	return hex.EncodeToString(sum[:16])
}
