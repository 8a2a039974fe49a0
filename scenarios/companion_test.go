package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// TestCompanionVerdict judges a companion from the kubelet's record of
// it and of its service, as a cluster's pods show them.
func TestCompanionVerdict(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	running := func(ended int, last *inventory.Exit) *inventory.PodStatus {
		return &inventory.PodStatus{RestartCount: ended, Exits: ended, Running: true, StartedAt: at(1), LastExit: last}
	}
	end := func(started, finished, code int) *inventory.Exit {
		return &inventory.Exit{Code: code, StartedAt: at(started), FinishedAt: at(finished)}
	}
	pod := inventory.Endpoint{Name: "directory-lldap-0", Container: "lldap"}
	for _, c := range []struct {
		name      string
		companion *inventory.PodStatus
		service   *inventory.PodStatus
		// want is "pass", "wait", "fail" or "inconclusive", with a word
		// of its message.
		want, says string
	}{
		{"never ended", running(0, nil), running(0, nil), "pass", "never ended"},
		{"never ended, the service restarted for a secret", running(0, nil), running(2, end(50, 90, 0)), "pass", "never ended"},
		{"not started yet", &inventory.PodStatus{}, running(0, nil), "wait", "not running yet"},
		{"killed while its service ran on", running(1, end(1, 100, 137)), running(0, nil), "fail", "ended 1 time, its service (container lldap) 0 times"},
		{"ended after its apply, again and again", &inventory.PodStatus{RestartCount: 3, Exits: 4, LastExit: end(90, 91, 0)}, running(1, end(1, 20, 0)), "fail", "ended 4 times"},
		{"ended with its service", running(1, end(1, 62, 143)), running(1, end(1, 60, 0)), "pass", "came with its service's"},
		{"ended with its service, waiting to start again", &inventory.PodStatus{RestartCount: 1, Exits: 2, LastExit: end(70, 92, 143)}, running(2, end(62, 90, 0)), "pass", "waits for the kubelet"},
		{"ended long after its service's last end", running(1, end(1, 200, 137)), running(1, end(1, 60, 0)), "fail", "beyond 30s, and its service ran on through it"},
		{"ended during a service run that ended later", running(1, end(1, 100, 137)), running(2, end(61, 300, 0)), "fail", "ended without its service"},
		{"ended before the service's last run", running(1, end(1, 40, 143)), running(2, end(61, 300, 0)), "inconclusive", "keeps only the last end"},
		// Its service's end one second before its last run: the
		// companion, slower to stop, ended within the grace after it.
		{"ended with an end of its service no longer on record", running(1, end(1, 70, 143)), running(2, end(61, 300, 0)), "inconclusive", "keeps only the last end"},
		{"its end not on record", running(1, nil), running(1, end(1, 60, 0)), "inconclusive", "no record"},
		// A stop of both, recorded for the companion first.
		{"just ended, its service's end not recorded yet", running(1, end(1, 995, 143)), running(0, nil), "wait", "may still be recorded"},
		{"just ended, its service's last end long ago", running(1, end(1, 995, 143)), running(1, end(1, 60, 0)), "wait", "may still be recorded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			note, err := companionVerdict("lldap", pod, &world.CompanionHistory{Companion: c.companion, Service: c.service, Grace: 30 * time.Second}, at(1000))
			var inc *InconclusiveError
			var mismatch *poll.Mismatch
			got, said := "fail", ""
			switch {
			case err == nil:
				got, said = "pass", note
			case errors.As(err, &inc):
				got, said = "inconclusive", err.Error()
			case errors.As(err, &mismatch) && !poll.IsPermanent(err):
				got, said = "wait", err.Error()
			case poll.IsPermanent(err):
				said = err.Error()
			default:
				t.Fatalf("an error that is neither a verdict nor a wait: %v", err)
			}
			if got != c.want || !strings.Contains(said, c.says) {
				t.Errorf("got %s: %s\nwant %s saying %q", got, said, c.want, c.says)
			}
		})
	}
}

// TestCompanionVerdictOnTheKubeletsClock: with no grace period, two ends
// of one stop a whole second apart on the kubelet's clock are one stop.
func TestCompanionVerdictOnTheKubeletsClock(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	exit := func(finished int) *inventory.Exit {
		return &inventory.Exit{Code: 143, StartedAt: t0, FinishedAt: t0.Add(time.Duration(finished) * time.Second)}
	}
	h := &world.CompanionHistory{
		Companion: &inventory.PodStatus{RestartCount: 1, Exits: 1, Running: true, LastExit: exit(61)},
		Service:   &inventory.PodStatus{RestartCount: 1, Exits: 1, Running: true, LastExit: exit(60)},
	}
	if _, err := companionVerdict("lldap", inventory.Endpoint{Name: "p", Container: "lldap"}, h, t0.Add(time.Hour)); err != nil {
		t.Errorf("ends a second apart with no grace: %v", err)
	}
}
