// Package poll waits for the world to change by polling it. The scenario
// suites and the test environments wait with it where a test would
// otherwise sleep. Eventually tries until a check passes or its window
// ends, and says what it last saw; Consistently shows that something
// does not happen over a window. The environments and the suites share
// it, and nothing else.
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
// the last thing seen or the last error, and which wait ran out.
type EventuallyError struct {
	Probe
	Tries   int
	Elapsed time.Duration
	Last    error
	// Unanswered says the world never answered the last try in time: the
	// wait ran out on the caller's deadline, not on the window.
	Unanswered bool
	// Answer is the last answer before the unanswered tries, if any.
	Answer error
	// watched says the window was one to watch (Consistently), not one
	// to wait out.
	watched bool
}

func (e *EventuallyError) Error() string {
	tries := "1 try"
	if e.Tries != 1 {
		tries = fmt.Sprintf("%d tries", e.Tries)
	}
	elapsed := e.Elapsed.Round(10 * time.Millisecond)
	if e.Unanswered {
		msg := fmt.Sprintf("at %s: expected %s; no answer before the deadline: %s (%s in %s", e.Endpoint, e.Expect, e.Last, tries, elapsed)
		if e.Within > 0 {
			msg += fmt.Sprintf(", past the window of %s", e.Within)
		}
		msg += ")"
		if e.Answer != nil {
			msg += "; the last answer: " + seen(e.Answer)
		}
		return msg
	}
	window := ""
	switch {
	case e.watched:
		window = ", watched over " + e.Within.String()
	case e.Within > 0:
		window = ", the window of " + e.Within.String()
	}
	return fmt.Sprintf("at %s: expected %s; %s (%s in %s%s)", e.Endpoint, e.Expect, seen(e.Last), tries, elapsed, window)
}

func (e *EventuallyError) Unwrap() error { return e.Last }

// seen is a try's error as a report says it: what the world answered.
func seen(err error) string {
	var m *Mismatch
	if errors.As(err, &m) {
		return "saw " + m.Seen
	}
	return err.Error()
}

// Backoff of Eventually: the first retry after minDelay, doubling to
// maxDelay.
const (
	minDelay = 50 * time.Millisecond
	maxDelay = 2 * time.Second
)

// AnswerTime is the least time a try may take. A loaded machine answers
// slowly; a slow answer is no answer, and no verdict: the try is retried.
const AnswerTime = time.Minute

// finalGrace is what a try at the caller's deadline may take: the last try
// watches the end of a window that is the deadline itself.
const finalGrace = 2 * time.Second

// Eventually calls try until it returns nil, backing off between tries.
// Two waits bound it. The window (p.Within, or ctx's deadline) bounds
// how long the world may take to show what is expected: an answer that
// differs after it ends is the verdict. ctx's deadline bounds how long
// the world may take to answer: a try that ran out of time, or an error
// that says so (NoAnswer, a timeout), is retried past the window, as a
// slow world is not a wrong one. Without a deadline on ctx, that retrying
// stops one window (at least AnswerTime) after the window. Each try may
// take AnswerTime, or to the window's end if later. A Permanent error
// stops the wait at once.
func Eventually(ctx context.Context, p Probe, try func(ctx context.Context) error) error {
	start := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	window, hasWindow := deadline, hasDeadline
	if p.Within > 0 {
		window, hasWindow = start.Add(p.Within), true
		if hasDeadline && deadline.Before(window) {
			window = deadline
		}
	}
	limit := deadline
	if !hasDeadline {
		limit = window.Add(max(p.Within, AnswerTime))
	}
	delay := minDelay
	timer := time.NewTimer(0)
	defer timer.Stop()
	var answer error // the last thing the world answered
	for tries := 1; ; tries++ {
		tryCtx, cancel := tryContext(ctx, window, deadline, hasDeadline)
		err := try(tryCtx)
		slow := err != nil && (tryCtx.Err() == context.DeadlineExceeded || IsNoAnswer(err))
		cancel()
		var perm *permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &perm):
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: perm.err}
		case ctx.Err() == context.Canceled:
			return context.Canceled
		}
		now := time.Now()
		if !slow {
			answer = err
			if hasWindow && !now.Before(window) {
				return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: err}
			}
		} else if (hasWindow || hasDeadline) && !now.Before(limit) {
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: err, Unanswered: true, Answer: answer}
		}
		// The last try in the window comes at its end, so that the wait
		// watches the whole window.
		wait := delay
		if hasWindow && now.Before(window) {
			wait = min(wait, window.Sub(now))
		} else if hasWindow || hasDeadline {
			wait = min(wait, max(limit.Sub(now), 0))
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

// tryContext is the context of one try: it may take AnswerTime, or to the
// window's end if that is later, within ctx's deadline. A try at the
// deadline itself gets finalGrace past it.
func tryContext(ctx context.Context, window, deadline time.Time, hasDeadline bool) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(AnswerTime)
	if window.After(end) {
		end = window
	}
	if hasDeadline && end.After(deadline) {
		end = deadline
	}
	if hasDeadline && !now.Before(deadline) {
		return context.WithTimeout(context.WithoutCancel(ctx), finalGrace)
	}
	return context.WithDeadline(ctx, end)
}

type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent marks an error that waiting cannot mend (a file that is not
// there, say): Eventually returns it at once.
func Permanent(err error) error { return &permanent{err} }

// noAnswer marks an error that says the world did not answer in time.
type noAnswer struct{ err error }

func (n *noAnswer) Error() string { return n.err.Error() }
func (n *noAnswer) Unwrap() error { return n.err }

// NoAnswer marks an error that tells of no answer, not a wrong one: a
// server that timed out, or said it is too busy. Eventually retries it
// past its window, until the caller's deadline.
func NoAnswer(err error) error { return &noAnswer{err} }

// IsNoAnswer says err tells of no answer: marked by NoAnswer, a deadline
// that passed, or a network timeout.
func IsNoAnswer(err error) bool {
	var n *noAnswer
	var timeout interface{ Timeout() bool }
	switch {
	case errors.As(err, &n), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &timeout):
		return timeout.Timeout()
	}
	return false
}

// IsPermanent says err, or an error it wraps, is Permanent.
func IsPermanent(err error) bool {
	var perm *permanent
	return errors.As(err, &perm)
}

// Consistently calls check until p.Within has passed, and fails at the
// first call that fails: it shows that something does not happen over a
// window, polling, where a test would otherwise sleep. A check that got
// no answer (NoAnswer, a timeout) is no verdict: the watch goes on, and
// a window whose last check went unanswered is checked again past its
// end, until an answer decides or the caller's deadline passes (without
// one, one window more, at least AnswerTime). What the check reads must
// therefore keep what happened in a gap (a restart count, not a state).
func Consistently(ctx context.Context, p Probe, check func(ctx context.Context) error) error {
	start := time.Now()
	deadline, hasDeadline := ctx.Deadline()
	limit := start.Add(p.Within + max(p.Within, AnswerTime))
	if hasDeadline {
		limit = deadline
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var unanswered error
	for tries := 1; ; tries++ {
		// A check runs under the caller's context, bounded by a window of
		// its own: a request that the window's end would cut short is no
		// failure of what it watches.
		checkCtx, cancelCheck := context.WithTimeout(ctx, max(p.Within, AnswerTime))
		err := check(checkCtx)
		cancelCheck()
		switch {
		case ctx.Err() == context.Canceled:
			return context.Canceled
		case err == nil:
			unanswered = nil
		case (IsNoAnswer(err) || checkCtx.Err() == context.DeadlineExceeded) && !IsPermanent(err):
			unanswered = err
		default:
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: err, watched: true}
		}
		watched := time.Since(start) >= p.Within
		switch {
		case watched && unanswered == nil:
			return nil // watched the whole window, the last check answered
		case watched && !time.Now().Before(limit):
			return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: unanswered, Unanswered: true, watched: true}
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.Canceled {
				return context.Canceled
			}
			if !watched {
				return &EventuallyError{Probe: p, Tries: tries, Elapsed: time.Since(start), Last: fmt.Errorf("the scenario's deadline came before the window of %s ended", p.Within), watched: true}
			}
			// The deadline passed on an unanswered check: one last try
			// decides (finalGrace), as Eventually's does.
			ctx = context.WithoutCancel(ctx)
			limit = time.Now()
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, finalGrace)
			defer cancel()
		case <-tick.C:
		}
	}
}
