// Package scenarios runs suites of scenarios against a deployed node's role
// pods, as the success criteria and acceptance scenarios of the pod-roles
// spec describe them. A suite is a set of scenarios; a scenario names the
// spec items it proves and is made of steps; steps that wait for the world
// poll the world (package poll) until a deadline, never sleep.
//
// The suites read where things are from an inventory (package inventory),
// so they run unchanged against the local environment of package vmtests,
// a deployment a person describes, or a cluster.
package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fediversity/podroles/scenarios/inventory"
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
	// Skip, when set, says why the scenario cannot run on an inventory
	// ("" when it can).
	Skip func(inv *inventory.Inventory) string
	// Exclusive scenarios change the world others observe (they restart
	// services, write secrets): they run after the others, one at a time.
	Exclusive bool
	Steps     []Step
}

// Step is one action or check of a scenario.
type Step struct {
	Name string
	Do   func(ctx context.Context, s *State) error
}

// State is what the steps of one run of a scenario share.
type State struct {
	Inv *inventory.Inventory
	// Values carries results from one step to the next.
	Values map[string]any
	// Patience bounds each wait for the world (poll.Probe.Within).
	Patience time.Duration
	notes    []string
}

// Note records what a step saw, for the report.
func (s *State) Note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// registry holds every suite, in the order `scenarios list` shows them.
var registry []*Suite

// register adds a suite; each suite's file registers it in init.
func register(s *Suite) { registry = append(registry, s) }

// Suites returns every suite.
func Suites() []*Suite { return slices.Clone(registry) }

// Select returns the suites named in names (all when names is empty), or an
// error naming a suite that does not exist.
func Select(names []string) ([]*Suite, error) {
	if len(names) == 0 {
		return Suites(), nil
	}
	var out []*Suite
	for _, name := range names {
		i := slices.IndexFunc(registry, func(s *Suite) bool { return s.Name == name })
		if i < 0 {
			var known []string
			for _, s := range registry {
				known = append(known, s.Name)
			}
			return nil, fmt.Errorf("no suite %q: the suites are %s", name, strings.Join(known, ", "))
		}
		out = append(out, registry[i])
	}
	return out, nil
}

// Status of a scenario's run.
type Status string

// The statuses.
const (
	Passed  Status = "passed"
	Failed  Status = "failed"
	Skipped Status = "skipped"
)

// Result is what one scenario's run came to.
type Result struct {
	Suite    string        `json:"suite"`
	Scenario string        `json:"scenario"`
	Spec     []string      `json:"spec"`
	Status   Status        `json:"status"`
	Duration time.Duration `json:"-"`
	Seconds  float64       `json:"seconds"`
	// Reason says why it failed or was skipped.
	Reason string       `json:"reason,omitempty"`
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

// joinErrors joins errors on one line, as a report line wants them.
func joinErrors(errs []error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}
