package scenarios

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fediversity/podroles/scenarios/world"
)

// Options of a run.
type Options struct {
	// Parallel is how many scenarios run at once; below 1 means 1.
	Parallel int
	// Timeout bounds each scenario.
	Timeout time.Duration
	// Patience bounds each wait of a step for the world; default 15s.
	Patience time.Duration
	// Run, when set, keeps the scenarios whose "suite/scenario" it matches.
	Run *regexp.Regexp
	// Disruptive lets the disruptive scenarios run.
	Disruptive bool
	// Progress, when set, hears of each scenario as it starts and ends.
	Progress func(Event)
	// ProbeImage is the runner's image, from which a reader is added to
	// the main pod of a cluster (service-ldaps-bind).
	ProbeImage string
	// FromRunner connects from the runner instead, for clusters where it
	// may not add containers to pods.
	FromRunner bool
}

// Event is a scenario starting (Result nil) or ending.
type Event struct {
	Suite, Scenario string
	Result          *Result
	Done, Total     int
}

// Run runs the scenarios of suites in the world w and returns their results
// in the order of the suites. Ctrl-C (ctx's cancel) stops the scenarios
// that run, marks them failed as interrupted, and skips the rest.
func Run(ctx context.Context, w world.World, suites []*Suite, opts Options) []*Result {
	type job struct {
		suite *Suite
		sc    *Scenario
		res   *Result
	}
	started := time.Now()
	var jobs []job
	for _, su := range suites {
		for _, sc := range su.Scenarios {
			r := &Result{Suite: su.Name, Scenario: sc.Name, Spec: sc.Spec, SelfCheck: sc.SelfCheck, Disruptive: sc.Disruptive, Steps: []StepResult{}}
			if opts.Run != nil && !opts.Run.MatchString(r.ID()) {
				continue
			}
			jobs = append(jobs, job{su, sc, r})
		}
	}
	// The exclusive ones last, in their order.
	slices.SortStableFunc(jobs, func(a, b job) int {
		switch {
		case a.sc.Exclusive == b.sc.Exclusive:
			return 0
		case b.sc.Exclusive:
			return -1
		}
		return 1
	})
	parallel := max(opts.Parallel, 1)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	report := func(j job, res *Result) {
		if opts.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if res != nil {
			done++
		}
		opts.Progress(Event{Suite: j.suite.Name, Scenario: j.sc.Name, Result: res, Done: done, Total: len(jobs)})
	}
	for _, j := range jobs {
		if j.sc.Exclusive {
			wg.Wait() // alone: after every scenario before it
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			j.res.Status, j.res.Reason = Skipped, "interrupted before it started"
			report(j, j.res)
			continue
		}
		wg.Add(1)
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			report(j, nil)
			runScenario(ctx, w, j.sc, opts, started, j.res)
			report(j, j.res)
		}(j)
		if j.sc.Exclusive {
			wg.Wait()
		}
	}
	wg.Wait()
	results := make([]*Result, len(jobs))
	for i, j := range jobs {
		results[i] = j.res
	}
	return results
}

// NotAskedToDisrupt is why a disruptive scenario that the run does not
// allow is skipped.
const NotAskedToDisrupt = "changes the deployment (revokes credentials, writes secrets or restarts sidecars): run with --disruptive, or set disruptive: true in the inventory"

// DefaultPatience bounds a wait for the world when Options say nothing.
const DefaultPatience = 15 * time.Second

// The defaults of `scenarios run`, which the tests on the real node run
// at as a user's run does.
const (
	DefaultParallel = 4
	DefaultTimeout  = 2 * time.Minute
)

func runScenario(ctx context.Context, w world.World, sc *Scenario, opts Options, runStarted time.Time, res *Result) {
	inv := w.Inventory()
	timeout := opts.Timeout
	start := time.Now()
	defer func() {
		res.Duration = time.Since(start)
		res.Seconds = res.Duration.Seconds()
	}()
	if sc.Disruptive && !opts.Disruptive && !inv.Disruptive {
		res.Status, res.Reason = Skipped, NotAskedToDisrupt
		return
	}
	if sc.Skip != nil {
		if why := sc.Skip(w); why != "" {
			res.Status, res.Reason = Skipped, why
			return
		}
	}
	state := &State{World: w, Inv: inv, Patience: opts.Patience, runStarted: runStarted, probeImage: opts.ProbeImage, fromRunner: opts.FromRunner}
	if state.Patience <= 0 {
		state.Patience = DefaultPatience
	}
	if timeout > 0 {
		state.deadline = start.Add(timeout)
	}
	if sc.Window != nil {
		state.Wait(sc.Window(ctx, w))
	}
	if sc.Seeded != nil {
		res.Seeded = sc.Seeded(inv)
	}
	defer func() { res.Windows = state.windows }()
	res.Status = Passed
	if sc.Steps.bind == nil {
		res.Status, res.Reason = Failed, "the scenario has no steps"
		return
	}
	for i, step := range sc.Steps.bind() {
		if !runAndRecord(ctx, state, sc.Steps.names[i], timeout, res, step) {
			break
		}
	}
	if sc.Disruptive && ctx.Err() == nil {
		settle(ctx, state, timeout, res)
	}
}

// runAndRecord runs one step and adds its result to res; false when it
// failed. The first failure is the scenario's reason.
func runAndRecord(ctx context.Context, state *State, name string, timeout time.Duration, res *Result, step func(context.Context, *State) error) bool {
	stepStart := time.Now()
	late, err := runStepUntil(ctx, state, step)
	sr := StepResult{Name: name, Status: Passed, Seconds: time.Since(stepStart).Seconds(), Notes: state.notes}
	state.notes = nil
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
			err = fmt.Errorf("interrupted")
		case late:
			err = fmt.Errorf("the scenario's deadline (%s) passed: %w", deadlineText(timeout, state.windows), err)
		}
		sr.Status, sr.Error = Failed, err.Error()
		var inc *InconclusiveError
		if errors.As(err, &inc) {
			sr.Status = Inconclusive
		}
		if res.Status != Failed {
			res.Status, res.Reason = sr.Status, fmt.Sprintf("%s: %s", name, err)
		}
	}
	res.Steps = append(res.Steps, sr)
	return err == nil
}

// settle ends a disruptive scenario, passed or failed: it waits until
// every pod runs its containers again, so that what comes next finds the
// deployment as the scenario found it. Its wait has a deadline of its
// own, grown by the longest back-off a pod names.
func settle(ctx context.Context, state *State, timeout time.Duration, res *Result) {
	if timeout > 0 {
		state.deadline = time.Now().Add(timeout)
	}
	runStepUntil(ctx, state, noteBackOffs)
	runAndRecord(ctx, state, SettleStep, timeout, res, podsRunAgain)
}

// runStepUntil runs a step under the scenario's deadline as it stands when
// the step starts: a Wait in one step moves it for the steps after.
func runStepUntil(ctx context.Context, s *State, step func(context.Context, *State) error) (late bool, err error) {
	s.Patience += s.grown
	s.grown = 0
	if s.deadline.IsZero() {
		return false, runStep(ctx, step, s)
	}
	ctx, cancel := context.WithDeadlineCause(ctx, s.deadline, errScenarioDeadline)
	defer cancel()
	err = runStep(ctx, step, s)
	// The deadline's own cause; or the clock, for a wait that gave up at
	// the deadline a moment before its timer fired.
	return context.Cause(ctx) == errScenarioDeadline || !time.Now().Before(s.deadline), err
}

// errScenarioDeadline is the cause of a step's context that the
// scenario's deadline ended.
var errScenarioDeadline = errors.New("the scenario's deadline passed")

// deadlineText says what a scenario's deadline was made of.
func deadlineText(timeout time.Duration, windows []string) string {
	if len(windows) == 0 {
		return "the timeout " + timeout.String()
	}
	return "the timeout " + timeout.String() + " and the windows " + strings.Join(windows, "; ")
}

// runStep runs a step and turns a panic into its failure, so that one bad
// step never takes the runner down.
func runStep(ctx context.Context, step func(context.Context, *State) error, s *State) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return step(ctx, s)
}
