package checks

import (
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

// Write writes the report in format: text, json or junit.
func (r *Report) Write(w io.Writer, format string) error { return report.Write(w, format, r) }

// WriteText writes a line per node and a line per finding under it, then a
// summary: readable in a terminal and in a CI log.
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
			fmt.Fprintf(&b, "  %-7s %s %s [%s]: %s\n", f.Severity, f.Rule, f.Subject, f.Spec, f.Message)
		}
	}
	verdict := "passed"
	if !r.Summary.Passed {
		verdict = "failed"
	}
	fmt.Fprintf(&b, "%s checked: %s, %s: %s\n", plural(r.Summary.Nodes, "node"), plural(r.Summary.Errors, "error"), plural(r.Summary.Warnings, "warning"), verdict)
	_, err := io.WriteString(w, b.String())
	return err
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
				lines = append(lines, fmt.Sprintf("%s %s: %s", f.Severity, f.Subject, f.Message))
				failed = failed || f.Severity == SeverityError || r.Strict
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
