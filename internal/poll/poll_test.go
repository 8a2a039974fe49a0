package poll

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestEventuallyBacksOffAndStopsOnPermanent(t *testing.T) {
	tries := 0
	err := Eventually(context.Background(), Probe{Endpoint: "e", Expect: "x", Within: 400 * time.Millisecond}, func(context.Context) error {
		tries++
		return Saw("try %d", tries)
	})
	var ee *EventuallyError
	if !errors.As(err, &ee) || tries < 3 || tries > 8 || !strings.Contains(err.Error(), "saw try") {
		t.Errorf("%d tries, err %v", tries, err)
	}
	tries = 0
	err = Eventually(context.Background(), Probe{Endpoint: "e", Expect: "x"}, func(context.Context) error {
		tries++
		return Permanent(errors.New("cannot mend"))
	})
	if tries != 1 || !strings.Contains(err.Error(), "cannot mend (1 try") {
		t.Errorf("%d tries, err %v", tries, err)
	}
}

// Consistently watches the whole window when nothing happens, and fails
// at the first check that fails, saying what it saw.
func TestConsistently(t *testing.T) {
	start, checks := time.Now(), 0
	err := Consistently(context.Background(), Probe{Endpoint: "e", Expect: "quiet", Within: 300 * time.Millisecond}, func(context.Context) error {
		checks++
		return nil
	})
	if err != nil || time.Since(start) < 300*time.Millisecond || checks < 2 {
		t.Errorf("a quiet window: err %v after %s and %d checks", err, time.Since(start), checks)
	}
	checks = 0
	err = Consistently(context.Background(), Probe{Endpoint: "e", Expect: "quiet", Within: time.Minute}, func(context.Context) error {
		if checks++; checks == 3 {
			return Saw("a change")
		}
		return nil
	})
	var ee *EventuallyError
	if !errors.As(err, &ee) || ee.Tries != 3 || !strings.Contains(err.Error(), "expected quiet; saw a change (3 tries") {
		t.Errorf("a change on the third check: %v", err)
	}
}

// A watch that gets no answer (a loaded machine's timeout) goes on: a
// later answer decides, also past the window, and a change seen after a
// gap fails; a watch never answered at its end fails as unanswered.
func TestConsistentlyTellsSlowFromWrong(t *testing.T) {
	window := 200 * time.Millisecond
	probe := Probe{Endpoint: "e", Expect: "quiet", Within: window}
	slow := NoAnswer(errors.New("exec: context deadline exceeded"))
	checks := 0
	err := Consistently(context.Background(), probe, func(context.Context) error {
		if checks++; checks <= 3 {
			return slow
		}
		return nil
	})
	if err != nil {
		t.Errorf("unanswered, then quiet: %v", err)
	}
	start, checks := time.Now(), 0
	err = Consistently(context.Background(), probe, func(context.Context) error {
		if checks++; time.Since(start) < 2*window {
			return slow // no answer until past the window
		}
		return Saw("an exit")
	})
	if err == nil || !strings.Contains(err.Error(), "saw an exit") {
		t.Errorf("unanswered past the window, then a change: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*window)
	defer cancel()
	err = Consistently(ctx, probe, func(context.Context) error { return slow })
	var ee *EventuallyError
	if !errors.As(err, &ee) || !ee.Unanswered || !strings.Contains(err.Error(), "no answer before the deadline") {
		t.Errorf("never answered: %v", err)
	}
	if err := Consistently(context.Background(), probe, func(context.Context) error { return Permanent(slow) }); err == nil {
		t.Error("a Permanent error was taken for no answer")
	}
}

// A slow world is not a wrong one: a try may take longer than the window,
// and a try that got no answer is retried past the window, until an
// answer decides or the caller's deadline passes.
func TestEventuallyTellsSlowFromWrong(t *testing.T) {
	window := 100 * time.Millisecond
	t.Run("a slow right answer passes", func(t *testing.T) {
		err := Eventually(context.Background(), Probe{Endpoint: "e", Expect: "x", Within: window}, func(ctx context.Context) error {
			select {
			case <-time.After(3 * window):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			t.Errorf("a try that answers right after the window: %v", err)
		}
	})
	t.Run("no answer, then a right one", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start, tries := time.Now(), 0
		err := Eventually(ctx, Probe{Endpoint: "e", Expect: "x", Within: window}, func(context.Context) error {
			if tries++; time.Since(start) < 4*window {
				return NoAnswer(errors.New("the server timed out"))
			}
			return nil
		})
		if err != nil || tries < 3 {
			t.Errorf("%d tries: %v", tries, err)
		}
	})
	t.Run("no answer, then a wrong one", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		err := Eventually(ctx, Probe{Endpoint: "e", Expect: "x", Within: window}, func(context.Context) error {
			if time.Since(start) < 4*window {
				return fmt.Errorf("exec: %w", context.DeadlineExceeded)
			}
			return Saw("y")
		})
		var ee *EventuallyError
		if !errors.As(err, &ee) || ee.Unanswered || !strings.Contains(err.Error(), "expected x; saw y (") || !strings.HasSuffix(err.Error(), ", the window of 100ms)") {
			t.Errorf("the first answer after the window decides: %v", err)
		}
	})
	t.Run("a wrong answer ends the wait at the window", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		err := Eventually(ctx, Probe{Endpoint: "e", Expect: "x", Within: window}, func(context.Context) error { return Saw("y") })
		if err == nil || time.Since(start) > 10*window {
			t.Errorf("after %s: %v", time.Since(start), err)
		}
	})
	t.Run("no answer before the deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*window)
		defer cancel()
		first := true
		err := Eventually(ctx, Probe{Endpoint: "e", Expect: "x", Within: window}, func(ctx context.Context) error {
			if first {
				first = false
				return Saw("y")
			}
			<-ctx.Done()
			return fmt.Errorf("exec: %w", ctx.Err())
		})
		var ee *EventuallyError
		if !errors.As(err, &ee) || !ee.Unanswered {
			t.Fatalf("want no answer: %v", err)
		}
		for _, want := range []string{"no answer before the deadline: exec: context deadline exceeded", "past the window of 100ms", "the last answer: saw y"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	})
}

func TestIsNoAnswer(t *testing.T) {
	for err, want := range map[error]bool{
		errors.New("refused"):        false,
		Saw("y"):                     false,
		NoAnswer(errors.New("busy")): true,
		fmt.Errorf("x: %w", context.DeadlineExceeded):        true,
		&net.DNSError{Err: "slow", IsTimeout: true}:          true,
		&net.DNSError{Err: "no such host", IsNotFound: true}: false,
	} {
		if IsNoAnswer(err) != want {
			t.Errorf("IsNoAnswer(%v) = %v", err, !want)
		}
	}
}
