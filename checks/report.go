package checks

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/report"
)

// ReportVersion is the version of the JSON report. Version 2 added
// evalErrors: nodes may be missing from nodes, named there instead.
const ReportVersion = 2

// Report is the outcome of checking nodes, as the check command prints it.
type Report struct {
	Version int       `json:"version"`
	Strict  bool      `json:"strict"`
	Summary Summary   `json:"summary"`
	Nodes   []*Result `json:"nodes"`
	// EvalErrors are the nodes that nix could not evaluate, which no rule
	// checked, sorted by node name.
	EvalErrors []EvalFailure `json:"evalErrors"`

	// ToolVersion is podroles' version, for SARIF.
	ToolVersion string `json:"-"`
	// Base is the absolute folder that relative files of locations are
	// relative to (see Locate), for SARIF; "" when unknown.
	Base string `json:"-"`
}

// Summary counts what a report found.
type Summary struct {
	// Nodes counts the nodes checked, EvalErrors those that nix could
	// not evaluate.
	Nodes      int `json:"nodes"`
	EvalErrors int `json:"evalErrors"`
	Errors     int `json:"errors"`
	Warnings   int `json:"warnings"`
	// Passed is false when a node could not be evaluated, an error was
	// found, or with strict a warning.
	Passed bool `json:"passed"`
}

// EvalFailure is a node that nix could not evaluate: it has no facts, and
// no rule ran on it.
type EvalFailure struct {
	// Node is the node's name; "" for a flake whose nodes nix could not
	// list.
	Node   string `json:"node"`
	Source string `json:"source"`
	// Message is nix's error, on one line.
	Message string `json:"message"`
	// Location is where nix places the error, or the node's file; nil
	// when neither is known.
	Location *facts.Location `json:"location,omitempty"`
}

// name is the node's name, or for a flake whose nodes nix could not list,
// its source.
func (f EvalFailure) name() string { return cmp.Or(f.Node, f.Source) }

// NewReport sums up results, and failed, the nodes that nix could not
// evaluate. With strict, warnings fail the check too.
func NewReport(results []*Result, strict bool, failed ...EvalFailure) *Report {
	r := &Report{Version: ReportVersion, Strict: strict, Nodes: results, EvalErrors: slices.Clone(failed)}
	if r.Nodes == nil {
		r.Nodes = []*Result{}
	}
	if r.EvalErrors == nil {
		r.EvalErrors = []EvalFailure{}
	}
	slices.SortStableFunc(r.EvalErrors, func(a, b EvalFailure) int { return strings.Compare(a.Node, b.Node) })
	r.Summary.Nodes = len(results)
	r.Summary.EvalErrors = len(failed)
	for _, res := range results {
		e, w := res.Count()
		r.Summary.Errors += e
		r.Summary.Warnings += w
	}
	r.Summary.Passed = len(failed) == 0 && r.Summary.Errors == 0 && (!strict || r.Summary.Warnings == 0)
	return r
}

// entry is a node of the report: checked, or not evaluated.
type entry struct {
	res    *Result
	failed *EvalFailure
}

// entries are the nodes checked and those not evaluated, by name, so that
// a node that failed is shown where it would have been.
func (r *Report) entries() []entry {
	var out []entry
	for _, res := range r.Nodes {
		out = append(out, entry{res: res})
	}
	for i := range r.EvalErrors {
		out = append(out, entry{failed: &r.EvalErrors[i]})
	}
	name := func(e entry) string {
		if e.failed != nil {
			return e.failed.Node
		}
		return e.res.Node
	}
	slices.SortStableFunc(out, func(a, b entry) int { return strings.Compare(name(a), name(b)) })
	return out
}

// line is the failure as one line of text, after its node.
func (f EvalFailure) line() string {
	line := "evaluation failed: " + report.Text(f.Message)
	if f.Location != nil {
		line += " (at " + f.Location.String() + ")"
	}
	return line
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
	for _, entry := range r.entries() {
		if f := entry.failed; f != nil {
			if f.Node == "" {
				fmt.Fprintf(&b, "%s: %s\n", report.Text(f.Source), f.line())
			} else {
				fmt.Fprintf(&b, "node %s (%s): %s\n", report.Name(f.Node), report.Text(f.Source), f.line())
			}
			continue
		}
		res := entry.res
		e, wn := res.Count()
		method := "not on k8s-pod.nix"
		if res.K8sPod {
			method = "on k8s-pod.nix"
		}
		status := "ok"
		if e+wn > 0 {
			status = fmt.Sprintf("%s, %s", plural(e, "error"), plural(wn, "warning"))
		}
		fmt.Fprintf(&b, "node %s (%s, %s): %s, %s run%s\n", report.Name(res.Node), report.Text(res.Source), method, status, plural(len(res.RulesRun), "rule"), noRuleRan(res))
		for _, f := range res.Findings {
			if f.Location != nil {
				fmt.Fprintf(&b, "%s: %s %s %s [%s]: %s\n", textPlace(f.Location), f.Severity, f.Rule, f.Subject, f.Spec, report.Text(f.Message))
			} else {
				fmt.Fprintf(&b, "  %-7s %s %s [%s]: %s\n", f.Severity, f.Rule, f.Subject, f.Spec, report.Text(f.Message))
			}
			for _, n := range f.Notes {
				if n.Location != nil {
					fmt.Fprintf(&b, "%s: note: %s\n", textPlace(n.Location), report.Text(n.Message))
				} else {
					fmt.Fprintf(&b, "    note: %s\n", report.Text(n.Message))
				}
			}
		}
	}
	b.WriteString(r.summaryLine() + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// about names the node and the subject of a finding, the node once
// where it is the subject.
func (f Finding) about() string {
	if f.Subject.Kind == SubjectNode && f.Subject.Name == f.Node {
		return f.Subject.String()
	}
	return fmt.Sprintf("node %s, %s", f.Node, f.Subject)
}

// textPlace is a location as a line of the text report starts with it:
// quoted where it holds a control character, and never starting with
// ":", so that no file's name reads as a CI runner's command (::error).
func textPlace(l *facts.Location) string {
	place := report.Name(l.String())
	if strings.HasPrefix(place, ":") {
		return "./" + place
	}
	return place
}

// noRuleRan says why no rule ran on a node, which passes it: nothing of
// the node was checked, and a report must not let that pass unsaid.
func noRuleRan(res *Result) string {
	if len(res.RulesRun) > 0 || len(res.Skipped) == 0 {
		return ""
	}
	return " (" + res.Skipped[0].Reason + ")"
}

// summaryLine is the last line of the text report.
func (r *Report) summaryLine() string {
	verdict := "passed"
	if !r.Summary.Passed {
		verdict = "failed"
	}
	checked := plural(r.Summary.Nodes, "node") + " checked"
	if r.Summary.EvalErrors > 0 {
		checked += fmt.Sprintf(", %d not evaluated", r.Summary.EvalErrors)
	}
	return fmt.Sprintf("%s: %s, %s: %s", checked, plural(r.Summary.Errors, "error"), plural(r.Summary.Warnings, "warning"), verdict)
}

func plural(n int, word string) string { return report.Count(n, word) }

// WriteJUnit writes a test suite per node with a test case per rule: a
// failure for a rule that found an error (or with strict a warning), a
// skipped case for a rule that does not apply to the node.
func (r *Report) WriteJUnit(w io.Writer) error {
	var suites []report.Suite
	for _, entry := range r.entries() {
		if f := entry.failed; f != nil {
			suites = append(suites, f.suite())
			continue
		}
		res := entry.res
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

// suite is the failure as a suite of its own: one case, in error, since
// no rule could run.
func (f EvalFailure) suite() report.Suite {
	suite := report.Suite{Name: f.name()}
	c := report.Case{Name: "evaluation", ClassName: "podroles.check." + f.name(),
		Error: &report.Failure{Message: "nix could not evaluate the node", Type: "evaluation", Text: f.line()}}
	if f.Location != nil {
		c.File, c.Line = f.Location.File, f.Location.Line
	}
	suite.Add(c)
	return suite
}

// line is the finding as one line of text: "FILE:LINE:COLUMN: SEVERITY
// SUBJECT: MESSAGE" when it has a location, with its notes on further lines.
func (f Finding) line() string {
	line := fmt.Sprintf("%s %s: %s", f.Severity, f.Subject, report.Text(f.Message))
	if f.Location != nil {
		line = f.Location.String() + ": " + line
	}
	for _, n := range f.Notes {
		if n.Location != nil {
			line += fmt.Sprintf("\n%s: note: %s", n.Location, report.Text(n.Message))
		} else {
			line += "\nnote: " + report.Text(n.Message)
		}
	}
	return line
}

// WriteGitHub writes each finding as a workflow command that GitHub
// Actions and Forgejo Actions show as an annotation of its file and line
// (::error file=F,line=L,col=C,title=PR101::...), then the summary line.
func (r *Report) WriteGitHub(w io.Writer) error {
	var annotations []report.Annotation
	for _, entry := range r.entries() {
		if f := entry.failed; f != nil {
			a := report.Annotation{Level: "error", Title: evalRuleID, Message: f.annotation()}
			if f.Location != nil {
				a.File, a.Line, a.Column = f.Location.File, f.Location.Line, f.Location.Column
			}
			annotations = append(annotations, a)
			continue
		}
		if why := noRuleRan(entry.res); why != "" {
			annotations = append(annotations, report.Annotation{Level: "notice", Title: "no rule ran",
				Message: fmt.Sprintf("node %s (%s): no rule ran%s", entry.res.Node, entry.res.Source, why)})
		}
		for _, f := range entry.res.Findings {
			a := report.Annotation{Level: string(f.Severity), Title: f.Rule}
			a.Message = fmt.Sprintf("%s: %s [%s]", f.about(), f.Message, f.Spec)
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
	var notifications []report.SARIFResult
	if len(r.EvalErrors) > 0 {
		rules = append(rules, report.SARIFRule{
			ID: evalRuleID, Name: "evaluation-failed", Level: "error", Tags: []string{"pod-roles"},
			Description: "nix could not evaluate the node, so no rule checked it",
			Help:        "nix could not evaluate the node, so no rule checked it: fix what nix says, at the place it names, and check again.",
		})
	}
	for _, entry := range r.entries() {
		if f := entry.failed; f != nil {
			out := report.SARIFResult{
				RuleID: evalRuleID, Level: "error", Message: f.annotation(),
				Fingerprint: fingerprint(Finding{Node: f.name(), Rule: evalRuleID}),
				Properties:  map[string]any{"node": f.Node, "source": f.Source},
			}
			if f.Location != nil {
				out.Location = &report.SARIFLocation{File: f.Location.File, Line: f.Location.Line, Column: f.Location.Column}
			}
			results = append(results, out)
			notifications = append(notifications, out)
			continue
		}
		for _, f := range entry.res.Findings {
			out := report.SARIFResult{
				RuleID: f.Rule, Level: string(f.Severity),
				Message:     fmt.Sprintf("%s: %s", f.about(), f.Message),
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
	return report.WriteSARIF(w, report.SARIFTool{Name: "podroles", Version: r.ToolVersion}, r.Base, rules, results, notifications)
}

// evalRuleID names, in the formats of CI, a node that nix could not
// evaluate: no rule's ID, since no rule ran.
const evalRuleID = "eval"

// annotation is the failure as the message of an annotation or a SARIF
// result, which name no node by themselves.
func (f EvalFailure) annotation() string {
	if f.Node == "" {
		return fmt.Sprintf("%s: evaluation failed: %s", f.Source, f.Message)
	}
	return fmt.Sprintf("node %s (%s): evaluation failed: %s", f.Node, f.Source, f.Message)
}

// fingerprint identifies a finding by what it is about, not where: the
// same finding keeps it when lines move.
func fingerprint(f Finding) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{f.Node, f.Rule, string(f.Subject.Kind), f.Subject.Name}, "\x00")))
	return hex.EncodeToString(sum[:16])
}
