package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/report"
	"github.com/fediversity/podroles/scenarios/world"
)

var testInv = &inventory.Inventory{Node: "n"}

func TestRunStatusesAndReasons(t *testing.T) {
	suite := &Suite{Name: "s", Scenarios: []*Scenario{
		{Name: "passes", Spec: []string{"SC-001"}, Steps: Sequence(
			Step[int]{Name: "one", Do: func(ctx context.Context, s *State, x *int) error {
				if *x != 0 {
					return errors.New("a run's state is not new")
				}
				*x = 1
				s.Note("set x")
				return nil
			}},
			Step[int]{Name: "two", Do: func(ctx context.Context, s *State, x *int) error {
				if *x != 1 {
					return errors.New("lost x")
				}
				return nil
			}},
		)},
		{Name: "fails", Spec: []string{"SC-002"}, Steps: Checks(
			Check{"first", func(ctx context.Context, s *State) error { return errors.New("boom") }},
			Check{"never", func(ctx context.Context, s *State) error { t.Error("a step after a failure ran"); return nil }},
		)},
		{Name: "skips", Skip: func(world.World) string { return "no lldap" }, Steps: Checks(
			Check{"never", func(ctx context.Context, s *State) error { t.Error("a skipped scenario ran"); return nil }},
		)},
		{Name: "panics", Steps: Checks(Check{"p", func(ctx context.Context, s *State) error { panic("oops") }})},
		{Name: "empty"},
		{Name: "cannot-judge", Steps: Checks(Check{"q", func(ctx context.Context, s *State) error {
			return poll.Eventually(ctx, poll.Probe{Endpoint: "e", Expect: "x", Within: time.Second}, func(context.Context) error {
				return inconclusive("the first run is gone")
			})
		}})},
	}}
	results := Run(context.Background(), world.Files(testInv), []*Suite{suite, suite}, Options{Parallel: 2})
	got := map[string]string{}
	for _, r := range results {
		got[r.Scenario] = string(r.Status) + ": " + r.Reason
	}
	want := map[string]string{
		"passes": "passed: ", "fails": "failed: first: boom", "skips": "skipped: no lldap", "panics": "failed: p: panic: oops",
		"empty": "failed: the scenario has no steps", "cannot-judge": "inconclusive: q: at e: expected x; inconclusive: the first run is gone (1 try in 0s, the window of 1s)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if results[0].Steps[0].Notes[0] != "set x" {
		t.Errorf("notes = %v", results[0].Steps[0].Notes)
	}
}

// An inconclusive scenario is no pass: the verdict says so, the text
// counts it, and JUnit reports it as a failure of its own type.
func TestInconclusiveIsNoPass(t *testing.T) {
	r := NewReport("directory", []*Result{
		{Suite: "s", Scenario: "a", Status: Passed},
		{Suite: "s", Scenario: "b", Status: Inconclusive, Reason: "q: inconclusive: the first run is gone"},
	})
	if r.Summary.OK || r.Summary.Verdict != VerdictInconclusive || r.Summary.Inconclusive != 1 || !strings.Contains(r.Why(), "1 scenarios could not judge") {
		t.Errorf("summary %+v, why %q", r.Summary, r.Why())
	}
	var text, junit strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "node directory: 1 passed, 0 failed, 0 skipped, 1 inconclusive") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
	if err := r.WriteJUnit(&junit); err != nil || !strings.Contains(junit.String(), `type="inconclusive"`) {
		t.Errorf("junit: %v\n%s", err, junit.String())
	}
	// Pods joined: inconclusive only when every pod is; a failure among
	// them is the verdict.
	var inc *InconclusiveError
	both := joinErrors([]error{inconclusive("pod a"), nil, inconclusive("pod b")})
	if !errors.As(both, &inc) || both.Error() != "inconclusive: pod a; inconclusive: pod b" {
		t.Errorf("joined inconclusive: %v", both)
	}
	if mixed := joinErrors([]error{inconclusive("pod a"), errors.New("pod b failed")}); errors.As(mixed, &inc) {
		t.Errorf("a failure among them is a failure: %v", mixed)
	}
}

func TestRunParallelLimitAndFilter(t *testing.T) {
	var running, peak atomic.Int32
	var scs []*Scenario
	for _, name := range []string{"a1", "a2", "a3", "a4", "a5", "b1"} {
		scs = append(scs, &Scenario{Name: name, Steps: Checks(Check{"wait", func(ctx context.Context, s *State) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			// Hold the slot a while, so that others would pile up.
			held := time.Now()
			return poll.Eventually(ctx, poll.Probe{Endpoint: "clock", Expect: "30ms to pass"}, func(context.Context) error {
				if time.Since(held) < 30*time.Millisecond {
					return poll.Saw("%s", time.Since(held))
				}
				return nil
			})
		}})})
	}
	results := Run(context.Background(), world.Files(testInv), []*Suite{{Name: "s", Scenarios: scs}}, Options{Parallel: 2, Run: regexp.MustCompile(`^s/a`)})
	if len(results) != 5 {
		t.Fatalf("--run kept %d scenarios, want the 5 a's", len(results))
	}
	if peak.Load() > 2 {
		t.Errorf("%d scenarios ran at once with Parallel 2", peak.Load())
	}
}

func TestScenarioTimeoutAndCancel(t *testing.T) {
	waits := &Scenario{Name: "waits", Steps: Checks(Check{"forever", func(ctx context.Context, s *State) error {
		return poll.Eventually(ctx, poll.Probe{Endpoint: "nowhere:1", Expect: "an answer"}, func(context.Context) error { return poll.Saw("silence") })
	}})}
	suite := &Suite{Name: "s", Scenarios: []*Scenario{waits}}
	r := Run(context.Background(), world.Files(testInv), []*Suite{suite}, Options{Timeout: 200 * time.Millisecond})[0]
	if r.Status != Failed || !strings.Contains(r.Reason, "at nowhere:1: expected an answer; saw silence") {
		t.Errorf("timeout: %s", r.Reason)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	results := Run(ctx, world.Files(testInv), []*Suite{{Name: "s", Scenarios: []*Scenario{waits, waits}}}, Options{Parallel: 1})
	if time.Since(start) > 5*time.Second {
		t.Errorf("cancel took %s", time.Since(start))
	}
	if results[0].Status != Failed || !strings.Contains(results[0].Reason, "interrupted") {
		t.Errorf("the running scenario: %s %s", results[0].Status, results[0].Reason)
	}
	if results[1].Status != Skipped || !strings.Contains(results[1].Reason, "interrupted before it started") {
		t.Errorf("the waiting scenario: %s %s", results[1].Status, results[1].Reason)
	}
}

// TestWindowsMoveTheDeadline: a scenario that must watch the world longer
// than the timeout (its declared window, or a Wait in an earlier step)
// passes, and its report names each window; one that watches longer than
// its windows still fails at the deadline, and says what it was made of.
func TestWindowsMoveTheDeadline(t *testing.T) {
	watch := func(d time.Duration) func(ctx context.Context, s *State) error {
		return func(ctx context.Context, s *State) error {
			return poll.Consistently(ctx, poll.Probe{Endpoint: "pod p", Expect: "nothing to restart", Within: d}, func(context.Context) error { return nil })
		}
	}
	window := func(context.Context, world.World) (time.Duration, string) {
		return 400 * time.Millisecond, "the render interval"
	}
	suite := &Suite{Name: "s", Scenarios: []*Scenario{
		{Name: "declared", Window: window, Steps: Checks(Check{"watch", watch(400 * time.Millisecond)})},
		{Name: "at-run-time", Steps: Checks(
			Check{"read the TTL", func(ctx context.Context, s *State) error { s.Wait(400*time.Millisecond, "the TTL"); return nil }},
			Check{"watch", watch(400 * time.Millisecond)},
		)},
		{Name: "too-long", Window: window, Steps: Checks(Check{"watch", watch(2 * time.Second)})},
		{Name: "no-window", Steps: Checks(Check{"watch", watch(400 * time.Millisecond)})},
	}}
	got := map[string]*Result{}
	for _, r := range Run(context.Background(), world.Files(testInv), []*Suite{suite}, Options{Parallel: 4, Timeout: 100 * time.Millisecond}) {
		got[r.Scenario] = r
	}
	for _, name := range []string{"declared", "at-run-time"} {
		if r := got[name]; r.Status != Passed || len(r.Windows) != 1 || !strings.Contains(r.Line(), "(waited 400ms: the") {
			t.Errorf("%s: %s %s, windows %q", name, r.Status, r.Reason, r.Windows)
		}
	}
	for _, name := range []string{"too-long", "no-window"} {
		if r := got[name]; r.Status != Failed || !strings.Contains(r.Reason, "deadline (the timeout 100ms") || !strings.Contains(r.Reason, "deadline came before the window") {
			t.Errorf("%s: %s %s", name, r.Status, r.Reason)
		}
	}
}

func TestReports(t *testing.T) {
	results := []*Result{
		{Suite: "ldap", Scenario: "a", Spec: []string{"SC-004"}, Status: Passed, Steps: []StepResult{{Name: "s", Status: Passed, Notes: []string{"ok"}}}},
		{Suite: "ldap", Scenario: "b", Spec: []string{"US1-15"}, Status: Failed, Reason: "s: boom", Steps: []StepResult{{Name: "s", Status: Failed, Error: "boom"}}},
		{Suite: "pg", Scenario: "c", Status: Skipped, Reason: "no postgres"},
	}
	r := NewReport("n", results)
	if r.Summary != (Summary{Passed: 1, Failed: 1, Skipped: 1, OK: false, Verdict: VerdictFailed}) {
		t.Errorf("summary = %+v", r.Summary)
	}
	var text, js, xmlOut bytes.Buffer
	r.Write(&text, "text")
	r.Write(&js, "json")
	r.Write(&xmlOut, "junit")
	if !strings.Contains(text.String(), "FAILED  ldap/b [US1-15] (0s): s: boom") || !strings.HasSuffix(text.String(), "node n: 1 passed, 1 failed, 1 skipped\n") {
		t.Errorf("text:\n%s", text.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != 3 || back.Results[1].Reason != "s: boom" {
		t.Errorf("json: %v\n%s", err, js.String())
	}
	var suites report.Suites
	if err := xml.Unmarshal(xmlOut.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	if suites.Tests != 3 || suites.Failures != 1 || suites.Skipped != 1 || len(suites.Suites) != 2 {
		t.Errorf("junit: %+v", suites)
	}
	if f := suites.Suites[0].Cases[1].Failure; f == nil || !strings.Contains(f.Text, "failed s: boom") {
		t.Errorf("junit failure: %+v", f)
	}
	if err := r.Write(&text, "yaml"); err == nil {
		t.Error("an unknown format is refused")
	}
}

// TestSelfChecksAloneAreNoPass: a run whose only passes are the runner's
// self-checks proved nothing about the node, as a run of skips alone.
func TestSelfChecksAloneAreNoPass(t *testing.T) {
	selfCheck := &Result{Suite: "ldap", Scenario: "wrong-ca-refused", SelfCheck: true, Status: Passed}
	skipped := &Result{Suite: "ldap", Scenario: "each-pod-binds", Status: Skipped, Reason: "no ldap"}
	judged := &Result{Suite: "ldap", Scenario: "service-ldaps-bind", Status: Passed}
	if s := NewReport("n", []*Result{selfCheck, skipped}).Summary; s != (Summary{Passed: 1, Skipped: 1, SelfChecks: 1, OK: false, Verdict: VerdictNothingRan}) {
		t.Errorf("a self-check and a skip: %+v", s)
	}
	if s := NewReport("n", []*Result{selfCheck, judged}).Summary; s != (Summary{Passed: 2, SelfChecks: 1, OK: true, Verdict: VerdictPassed}) {
		t.Errorf("a self-check beside a scenario that judged the node: %+v", s)
	}
	r := NewReport("n", []*Result{selfCheck, skipped})
	if r.Why() != "no scenario ran: of the 2 selected, 1 passed only as runner self-checks (no evidence about the node) and 1 were skipped (each says why in the report)" {
		t.Errorf("why = %q", r.Why())
	}
	if r.AllowSkips(); r.Summary.Verdict != VerdictPassed || r.Why() != "" {
		t.Errorf("allowed to skip: %+v %q", r.Summary, r.Why())
	}
}

func TestSelect(t *testing.T) {
	if _, err := Select([]string{"ldap", "nope"}); err == nil || !strings.Contains(err.Error(), `no suite "nope": the suites are `) {
		t.Errorf("err = %v", err)
	}
	all, _ := Select(nil)
	if len(all) != len(Suites()) {
		t.Error("no names select every suite")
	}
}

func TestExclusiveScenariosRunAlone(t *testing.T) {
	var running atomic.Int32
	var order []string
	var mu sync.Mutex
	mk := func(name string, exclusive bool) *Scenario {
		return &Scenario{Name: name, Exclusive: exclusive, Steps: Checks(Check{"s", func(ctx context.Context, s *State) error {
			n := running.Add(1)
			defer running.Add(-1)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			held := time.Now()
			return poll.Eventually(ctx, poll.Probe{Endpoint: "clock", Expect: "20ms"}, func(context.Context) error {
				if exclusive && n != 1 {
					return poll.Permanent(fmt.Errorf("%s ran beside %d others", name, n-1))
				}
				if time.Since(held) < 20*time.Millisecond {
					return poll.Saw("%s", time.Since(held))
				}
				return nil
			})
		}})}
	}
	suite := &Suite{Name: "s", Scenarios: []*Scenario{mk("x1", true), mk("p1", false), mk("x2", true), mk("p2", false), mk("p3", false)}}
	for _, r := range Run(context.Background(), world.Files(testInv), []*Suite{suite}, Options{Parallel: 4}) {
		if r.Status != Passed {
			t.Errorf("%s: %s", r.Scenario, r.Reason)
		}
	}
	if last := order[len(order)-2:]; last[0] != "x1" || last[1] != "x2" {
		t.Errorf("the exclusive scenarios ran in the order %v, want them last, in their order", order)
	}
}

// A disruptive scenario ends once every pod runs its service again, also
// after a failure, and fails when a pod stays down.
func TestDisruptiveScenariosSettle(t *testing.T) {
	dir := t.TempDir()
	status := func(name string, running bool) inventory.Endpoint {
		file := dir + "/" + name + ".json"
		st := inventory.PodStatus{Pod: name, UID: "u", Running: running, ServicePID: 1}
		if !running {
			// Its second exit awaits a restart, in a back-off that it
			// names: else the wait is a kubelet's longest, 5 minutes.
			st.ServicePID, st.RestartCount, st.Exits, st.BackOff = 0, 1, 2, 200*time.Millisecond
			st.LastExit = &inventory.Exit{Code: 0, Reason: "Completed", FinishedAt: time.Now()}
		}
		data, _ := json.Marshal(st)
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return inventory.Endpoint{Name: name, StatusFile: file}
	}
	inv := &inventory.Inventory{Node: "n", Disruptive: true, Roles: map[string]*inventory.Role{
		"up":   {Pods: []inventory.Endpoint{status("n-up-0", true)}},
		"down": {Pods: []inventory.Endpoint{status("n-down-0", false)}},
	}}
	ok := func(context.Context, *State) error { return nil }
	fail := func(context.Context, *State) error { return errors.New("boom") }
	suite := &Suite{Name: "s", Scenarios: []*Scenario{
		{Name: "passes", Disruptive: true, Steps: Checks(Check{"restart", ok})},
		{Name: "fails", Disruptive: true, Steps: Checks(Check{"restart", fail})},
		{Name: "plain", Steps: Checks(Check{"look", ok})},
	}}
	got := map[string]*Result{}
	for _, r := range Run(context.Background(), world.Files(inv), []*Suite{suite}, Options{Patience: 300 * time.Millisecond, Timeout: time.Second}) {
		got[r.Scenario] = r
	}
	settled := func(r *Result) *StepResult {
		last := &r.Steps[len(r.Steps)-1]
		if last.Name != SettleStep {
			return nil
		}
		return last
	}
	if r := got["passes"]; r.Status != Failed || settled(r) == nil || !strings.Contains(r.Reason, "the service of pod n-down-0 does not run (exit code 0 (Completed)") || strings.Contains(r.Reason, "n-up-0") ||
		!slices.ContainsFunc(r.Windows, func(w string) bool {
			return strings.HasPrefix(w, "200ms: the kubelet's back-off of the service of pod n-down-0")
		}) {
		t.Errorf("passes: %s %s %q", r.Status, r.Reason, r.Windows)
	}
	if r := got["fails"]; r.Status != Failed || !strings.HasPrefix(r.Reason, "restart: boom") || settled(r) == nil || settled(r).Status != Failed {
		t.Errorf("fails: %s %s; steps %+v", r.Status, r.Reason, r.Steps)
	}
	if r := got["plain"]; r.Status != Passed || settled(r) != nil {
		t.Errorf("plain: %s %s; steps %+v", r.Status, r.Reason, r.Steps)
	}
	// Once the pod runs again, the same scenario passes.
	inv.Roles["down"].Pods[0] = status("n-down-0", true)
	for _, r := range Run(context.Background(), world.Files(inv), []*Suite{suite}, Options{Run: regexp.MustCompile("passes"), Patience: 300 * time.Millisecond}) {
		if r.Status != Passed || settled(r) == nil || settled(r).Status != Passed {
			t.Errorf("passes, once settled: %s %s", r.Status, r.Reason)
		}
	}
}
