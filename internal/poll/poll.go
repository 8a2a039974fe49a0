// Package poll waits for the world to change by polling it, as the scenario
// suites and the test environments do where a test would otherwise sleep:
// Eventually tries until a check passes or its window ends, and says what it
// last saw; Consistently shows that something does not happen over a
// window. The environments and the suites share it, and nothing else.
package poll

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Probe says what a step waits for: where it looks and what it expects.
type Probe struct {
	// Endpoint is what the step talks to, for the report.
	Endpoint string
	// Expect is what the step waits to see.
	Expect string
	// Within bounds the wait; 0 waits until the scenario's deadline.
	Within time.Duration
}

// Mismatch is what a try returns when the world answered, but not as
// expected: Seen is what it answered.
type Mismatch struct{ Seen string }

func (m *Mismatch) Error() string { return "saw " + m.Seen }

// Saw returns a Mismatch.
func Saw(format string, args ...any) error { return &Mismatch{Seen: fmt.Sprintf(format, args...)} }

// EventuallyError is a wait that ran out: the endpoint, what was expected,
// and the last thing seen or the last error.
type EventuallyError struct {
	Probe
	Tries   int
	Elapsed time.Duration
	Last    error
}

func (e *EventuallyError) Error() string {
	last := e.Last.Error()
	var m *Mismatch
	if errors.As(e.Last, &m) {
		last = "saw " + m.Seen
	}
	tries := "1 try"
	if e.Tries != 1 {
		tries = fmt.Sprintf("%d tries", e.Tries)
	}
	return fmt.Sprintf("at %s: expected %s; %s (%s in %s)", e.Endpoint, e.Expect, last, tries, e.Elapsed.Round(10*time.Millisecond))
}

func (e *EventuallyError) Unwrap() error { return e.Last }

// Backoff of Eventually: the first retry after minDelay, doubling to
// maxDelay.
const (
	minDelay = 50 * time.Millisecond
	maxDelay = 2 * time.Second
)

// Eventually calls try until it returns nil, backing off between tries,
// until p.Within or ctx's deadline passes; then it returns what it last
// saw. A try that returns a Permanent error stops the wait at once.
func Eventually(ctx context.Context, p Probe, try func(ctx context.Context) error) error {
	if p.Within > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.Within)
		defer cancel()
	}
	start := time.Now()
	delay := minDelay
	timer := time.NewTimer(0)
	defer timer.Stop()
	deadline, hasDeadline := ctx.Deadline()
	var last error
	for tries := 1; ; tries++ {
		// The last try comes just before the deadline, so that the wait
		// watches the whole window.
		tryCtx := ctx
		final := hasDeadline && time.Until(deadline) <= 0
		if final {
			var cancel context.CancelFunc
			tryCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
		}
		last = try(tryCtx)
		if last == nil {
			return nil
		}
		var perm *permanent
		if errors.As(last, &perm) {
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: perm.err}
		}
		if final || ctx.Err() == context.Canceled {
			if ctx.Err() == context.Canceled {
				return context.Canceled
			}
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: last}
		}
		wait := delay
		if hasDeadline {
			wait = min(wait, max(time.Until(deadline), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				return context.Canceled
			}
		case <-timer.C:
		}
		delay = min(delay*2, maxDelay)
	}
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks an error that waiting cannot mend (a file that is not
// there, say): Eventually returns it at once.
func Permanent(err error) error { return &permanent{err} }

// IsPermanent says err, or an error it wraps, is Permanent.
func IsPermanent(err error) bool {
	var perm *permanent
	return errors.As(err, &perm)
}

// Consistently calls check until p.Within has passed, and fails at the
// first call that fails: it shows that something does not happen over a
// window, polling, where a test would otherwise sleep.
func Consistently(ctx context.Context, p Probe, check func(ctx context.Context) error) error {
	// A check runs under the caller's context, not the window's, bounded
	// by a window of its own: a request that the window's end would cut
	// short is no failure of what it watches.
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, p.Within)
	defer cancel()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for tries := 1; ; tries++ {
		checkCtx, cancelCheck := context.WithTimeout(outer, p.Within)
		err := check(checkCtx)
		cancelCheck()
		if err != nil {
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: err}
		}
		select {
		case <-ctx.Done():
			if time.Since(start) >= p.Within {
				return nil // watched the whole window
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: fmt.Errorf("the scenario's deadline came before the window of %s ended", p.Within)}
		case <-tick.C:
		}
	}
}
