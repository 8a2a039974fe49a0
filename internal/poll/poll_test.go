package poll

import (
	"context"
	"errors"
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
