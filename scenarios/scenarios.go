// Package scenarios runs suites of scenarios against a deployed node's
// role pods. It runs them as the success criteria and acceptance
// scenarios of the pod-roles spec describe them. A suite is a set of
// scenarios; a scenario names the spec items it proves and is made of
// steps; steps that wait for the world poll the world (package poll)
// until a deadline, never sleep.
//
// The suites read where things are from an inventory (package inventory),
// and what the node states (the ldap contract, authelia's host and CA, the
// roles' secrets) from the node's facts, so they run unchanged against the
// local environment of package localenv, a deployment a person describes,
// or a cluster.
package scenarios

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// Suite is a named set of scenarios.
type Suite struct {
	Name      string
	Doc       string
	Scenarios []*Scenario
}

// Scenario is one thing the spec says must hold, proved by steps in order.
type Scenario struct {
	Name string
	// Spec lists the spec items the scenario proves, e.g. "SC-004".
	Spec []string
	Doc  string
	// SelfCheck marks a scenario that proves the runner's own client
	// (that it refuses what it must), not the deployment: its pass is no
	// evidence about the node. `scenarios list`, docs/scenarios.md and the
	// reports say so (SelfCheckMark).
	SelfCheck bool
	// Skip, when set, says why the scenario cannot run in a world ("" when
	// it can): a suite that reads a cluster's objects declares it here
	// (needsCluster).
	Skip func(w world.World) string
	// Exclusive scenarios change the world others observe (they restart
	// services, write secrets): they run after the others, one at a time.
	Exclusive bool
	// Disruptive scenarios change the deployment (they revoke credentials,
	// write secrets, kill sidecars): they run only when the run allows it
	// (Options.Disruptive, or the inventory's disruptive: true).
	Disruptive bool
	// Window, when set, says how long the scenario must watch the world
	// on an inventory (an agent's render interval, say), and why. The
	// runner adds it to the scenario's timeout, so that a long window of
	// a right deployment is no failure.
	Window func(ctx context.Context, w world.World) (time.Duration, string)
	// Seeded, when set, says what of the world the scenario reads that
	// the deployment did not write on an inventory (rows an environment
	// seeded where a stand-in runs in place of the role's service); the
	// report marks the result with it ("" when nothing).
	Seeded func(inv *inventory.Inventory) string
	// Uses are what the scenario's steps ask of a cluster's API, each a
	// capability with the access it takes there (usesNothing when it
	// asks nothing). `scenarios manifest` derives the runner's Role from
	// them (Access).
	Uses  []Capability
	Steps Steps
}

// SelfCheckMark starts the description of a scenario that proves the
// runner's own client, not the deployment, where a list shows it: `scenarios
// list` and the generated reference.
const SelfCheckMark = "(runner self-check, no evidence about the node) "

// DisruptiveMark starts the description of a disruptive scenario where a
// list shows it.
const DisruptiveMark = "(disruptive: runs only with --disruptive) "

// MarkedDoc is the scenario's Doc as lists show it: after the marks of a
// disruptive scenario and of a runner self-check.
func (sc *Scenario) MarkedDoc() string {
	doc := sc.Doc
	if sc.SelfCheck {
		doc = SelfCheckMark + doc
	}
	if sc.Disruptive {
		doc = DisruptiveMark + doc
	}
	return doc
}

// Steps are a scenario's steps in order, with the state they share: made
// by Sequence (steps that pass values to each other) or Checks (steps
// that share nothing).
type Steps struct {
	names []string
	// bind makes the steps of one run, over a new state.
	bind func() []func(context.Context, *State) error
}

// Names are the steps' names, in order.
func (st Steps) Names() []string { return st.names }

// Step is one step of a scenario whose steps share a value of type T: what
// one step found (a pod's restart count, the time of a login) is a field
// of T that the next step reads, checked by the compiler.
type Step[T any] struct {
	Name string
	Do   func(ctx context.Context, s *State, v *T) error
}

// Sequence makes the steps of a scenario that share a value of type T, a
// new one for each run of the scenario.
func Sequence[T any](steps ...Step[T]) Steps {
	names := make([]string, len(steps))
	for i, st := range steps {
		names[i] = st.Name
	}
	return Steps{names: names, bind: func() []func(context.Context, *State) error {
		v := new(T)
		out := make([]func(context.Context, *State) error, len(steps))
		for i, st := range steps {
			out[i] = func(ctx context.Context, s *State) error { return st.Do(ctx, s, v) }
		}
		return out
	}}
}

// Check is a step that shares nothing with the others.
type Check struct {
	Name string
	Do   func(ctx context.Context, s *State) error
}

// Checks makes the steps of a scenario whose steps share nothing.
func Checks(checks ...Check) Steps {
	names := make([]string, len(checks))
	steps := make([]func(context.Context, *State) error, len(checks))
	for i, c := range checks {
		names[i], steps[i] = c.Name, c.Do
	}
	return Steps{names: names, bind: func() []func(context.Context, *State) error { return steps }}
}

// State is what the steps of one run of a scenario share, besides the
// value of their Sequence.
type State struct {
	// World is the deployment the steps ask of; Inv its inventory.
	World world.World
	Inv   *inventory.Inventory
	// Patience bounds each wait for the world (poll.Probe.Within).
	Patience time.Duration
	notes    []string
	// deadline is when the scenario's steps must end; Wait moves it.
	deadline time.Time
	// windows are the waits that moved the deadline, for the report.
	windows []string
	// grown is what Wait added, which the next step's Patience adds.
	grown time.Duration
	// runStarted is when the run began: an exit of a service since
	// then happened while the suites judged it.
	runStarted time.Time
	// probeImage and fromRunner are Options'.
	probeImage string
	fromRunner bool
}

// Note records what a step saw, for the report.
func (s *State) Note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// Wait says that a later step must watch the world for d, for the
// reason why (a credential's TTL read at run time, a kubelet's back-off).
// From the next step on, the scenario's deadline and each wait's
// patience grow by d. The report names the window.
func (s *State) Wait(d time.Duration, why string) {
	if d <= 0 {
		return
	}
	if !s.deadline.IsZero() {
		s.deadline = s.deadline.Add(d)
	}
	s.grown += d
	s.windows = append(s.windows, fmt.Sprintf("%s: %s", d, why))
}

// Status of a scenario's run.
type Status string

// The statuses.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
	// Inconclusive: the scenario ran, but what the cluster keeps cannot
	// tell a right deployment from a wrong one; no pass.
	Inconclusive Status = "inconclusive"
)

// InconclusiveError is why a scenario cannot judge: the state that would
// decide is gone (a kubelet keeps the last ended run only) or too coarse.
type InconclusiveError struct {
	Why string
	// joined: Why is the joined text of several, each saying so.
	joined bool
}

func (e *InconclusiveError) Error() string {
	if e.joined {
		return e.Why
	}
	return "inconclusive: " + e.Why
}

// inconclusive ends a step's wait with no verdict.
func inconclusive(format string, args ...any) error {
	return poll.Permanent(&InconclusiveError{Why: fmt.Sprintf(format, args...)})
}

// Result is what one scenario's run came to.
type Result struct {
	Suite    string   `json:"suite"`
	Scenario string   `json:"scenario"`
	Spec     []string `json:"spec"`
	// SelfCheck: the scenario proves the runner's client, not the node.
	SelfCheck bool `json:"selfCheck,omitempty"`
	// Disruptive: the scenario changes the deployment.
	Disruptive bool          `json:"disruptive,omitempty"`
	Status     Status        `json:"status"`
	Duration   time.Duration `json:"-"`
	Seconds    float64       `json:"seconds"`
	// Reason says why it failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// Windows are the waits the scenario's deadline was moved for, each
	// with its length and reason.
	Windows []string `json:"windows,omitempty"`
	// Seeded says what the scenario read that the deployment did not
	// write (Scenario.Seeded): its pass proves less.
	Seeded string       `json:"seeded,omitempty"`
	Steps  []StepResult `json:"steps"`
}

// StepResult is what one step came to.
type StepResult struct {
	Name    string   `json:"name"`
	Status  Status   `json:"status"`
	Seconds float64  `json:"seconds"`
	Error   string   `json:"error,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// ID is "suite/scenario", what --run matches.
func (res *Result) ID() string { return res.Suite + "/" + res.Scenario }

// joinErrors joins errors on one line, as a report line wants them. The
// join of inconclusive errors alone is inconclusive; one failure among
// them makes a failure.
func joinErrors(errs []error) error {
	var msgs []string
	allInconclusive := true
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
			var inc *InconclusiveError
			allInconclusive = allInconclusive && errors.As(err, &inc)
		}
	}
	switch {
	case len(msgs) == 0:
		return nil
	case allInconclusive:
		return &InconclusiveError{Why: strings.Join(msgs, "; "), joined: true}
	}
	return errors.New(strings.Join(msgs, "; "))
}
