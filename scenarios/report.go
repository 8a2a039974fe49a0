package scenarios

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fediversity/podroles/report"
)

// Report is a run's results, as `scenarios run` prints it.
type Report struct {
	Version int       `json:"version"`
	Node    string    `json:"node"`
	Summary Summary   `json:"summary"`
	Results []*Result `json:"scenarios"`
}

// Summary counts the results.
type Summary struct {
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Inconclusive counts the scenarios that could not judge.
	Inconclusive int `json:"inconclusive,omitempty"`
	// SelfChecks counts the passed scenarios that are the runner's
	// self-checks (Scenario.SelfCheck), among Passed.
	SelfChecks int `json:"selfChecks,omitempty"`
	// OK: none failed, and one at least passed that is no self-check: a
	// run of nothing but skips and self-checks proved nothing about the
	// node (unless the runner was told to allow it).
	OK bool `json:"ok"`
	// Verdict is what the run came to, which a command maps to its exit.
	Verdict Verdict `json:"verdict"`
}

// Verdict is what a run came to.
type Verdict string

// The verdicts.
const (
	VerdictPassed Verdict = "passed"
	VerdictFailed Verdict = "failed"
	// VerdictInconclusive: none failed, but one at least could not judge;
	// no pass for a script or CI.
	VerdictInconclusive Verdict = "inconclusive"
	// VerdictNothingRan: every scenario was skipped, or passed only as a
	// runner self-check. Nothing was judged of the node.
	VerdictNothingRan Verdict = "nothing ran"
)

// NewReport sums up results.
func NewReport(node string, results []*Result) *Report {
	r := &Report{Version: 1, Node: node, Results: results}
	if r.Results == nil {
		r.Results = []*Result{}
	}
	for _, res := range results {
		switch res.Status {
		case Passed:
			r.Summary.Passed++
			if res.SelfCheck {
				r.Summary.SelfChecks++
			}
		case Failed:
			r.Summary.Failed++
		case Inconclusive:
			r.Summary.Inconclusive++
		default:
			r.Summary.Skipped++
		}
	}
	r.judge(false)
	return r
}

// AllowSkips lets a run in which nothing ran pass, as --allow-skip asks.
func (r *Report) AllowSkips() { r.judge(true) }

func (r *Report) judge(allowSkips bool) {
	s := &r.Summary
	switch {
	case s.Failed > 0:
		s.Verdict = VerdictFailed
	case s.Inconclusive > 0:
		s.Verdict = VerdictInconclusive
	case s.Passed > s.SelfChecks || allowSkips:
		s.Verdict = VerdictPassed
	default:
		s.Verdict = VerdictNothingRan
	}
	s.OK = s.Verdict == VerdictPassed
}

// Why says in one line why the run did not pass ("" when it did).
func (r *Report) Why() string {
	s := r.Summary
	switch {
	case s.Verdict == VerdictFailed:
		return fmt.Sprintf("%d scenarios failed", s.Failed)
	case s.Verdict == VerdictInconclusive:
		return fmt.Sprintf("%d scenarios could not judge the deployment (each says why in the report): no pass", s.Inconclusive)
	case s.Verdict == VerdictNothingRan && s.SelfChecks > 0:
		// A self-check proves the runner's client, not the node: with
		// skips alone beside it, nothing was judged of the node.
		return fmt.Sprintf("no scenario ran: of the %d selected, %d passed only as runner self-checks (no evidence about the node) and %d were skipped (each says why in the report)", len(r.Results), s.SelfChecks, s.Skipped)
	case s.Verdict == VerdictNothingRan:
		// A skipped scenario proved nothing: a run of nothing but skips
		// is no pass for a script or CI.
		return fmt.Sprintf("no scenario ran: all %d selected were skipped (each says why in the report)", s.Skipped)
	}
	return ""
}

// Write writes the report in format: text, json or junit.
func (r *Report) Write(w io.Writer, format string) error { return report.Write(w, format, r) }

// Line is the text line of one result.
func (res *Result) Line() string {
	line := fmt.Sprintf("%-7s %s [%s] (%s)", strings.ToUpper(string(res.Status)), res.ID(), strings.Join(res.Spec, ", "), res.Duration.Round(time.Millisecond))
	if res.SelfCheck {
		line += " (runner self-check)"
	}
	if len(res.Windows) > 0 {
		line += " (waited " + strings.Join(res.Windows, "; ") + ")"
	}
	if res.Seeded != "" {
		line += " (seeded: " + res.Seeded + ")"
	}
	if res.Reason != "" {
		line += ": " + res.Reason
	}
	return line
}

// WriteText writes a line per scenario and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, res := range r.Results {
		b.WriteString(res.Line())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "node %s: %d passed, %d failed, %d skipped", r.Node, r.Summary.Passed, r.Summary.Failed, r.Summary.Skipped)
	if r.Summary.Inconclusive > 0 {
		fmt.Fprintf(&b, ", %d inconclusive", r.Summary.Inconclusive)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJUnit writes a test suite per suite and a test case per scenario.
func (r *Report) WriteJUnit(w io.Writer) error {
	var suites []report.Suite
	index := map[string]int{}
	for _, res := range r.Results {
		i, ok := index[res.Suite]
		if !ok {
			i = len(suites)
			index[res.Suite] = i
			suites = append(suites, report.Suite{Name: res.Suite})
		}
		c := report.Case{Name: res.Scenario, ClassName: "podroles.scenarios." + r.Node + "." + res.Suite, Time: res.Seconds}
		var steps []string
		for _, w := range res.Windows {
			steps = append(steps, "waited "+w)
		}
		if res.Seeded != "" {
			steps = append(steps, "seeded: "+res.Seeded)
		}
		for _, s := range res.Steps {
			line := fmt.Sprintf("%s %s", s.Status, s.Name)
			if s.Error != "" {
				line += ": " + s.Error
			}
			for _, n := range s.Notes {
				line += "\n    " + n
			}
			steps = append(steps, line)
		}
		switch res.Status {
		case Failed:
			c.Failure = &report.Failure{Message: res.Reason, Type: strings.Join(res.Spec, ", "), Text: strings.Join(steps, "\n")}
		case Inconclusive:
			// No pass: a CI reading JUnit must not take it for one.
			c.Failure = &report.Failure{Message: res.Reason, Type: "inconclusive", Text: strings.Join(steps, "\n")}
		case Skipped:
			c.Skipped = &report.Skipped{Message: res.Reason}
		default:
			c.SystemOut = strings.Join(steps, "\n")
		}
		suites[i].Add(c)
	}
	return report.WriteJUnit(w, "podroles scenarios", suites)
}
