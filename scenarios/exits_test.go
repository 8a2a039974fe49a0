package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/inventory"
)

// A main container's last exit, judged for a run that began at 12:00:00.
func TestLastExitVerdict(t *testing.T) {
	since := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	exit := func(min int, code int, reason, message string) *inventory.Exit {
		return &inventory.Exit{Code: code, Reason: reason, Message: message,
			StartedAt: since.Add(time.Duration(min-5) * time.Minute), FinishedAt: since.Add(time.Duration(min) * time.Minute)}
	}
	status := func(restarts int, e *inventory.Exit) *inventory.PodStatus {
		return &inventory.PodStatus{RestartCount: restarts, Exits: restarts, Running: true, LastExit: e}
	}
	restart := inventory.RestartMessagePrefix + "db.env"
	liveness := []string{"Container authelia failed liveness probe, will be restarted (event Killing at 11:40:01)"}
	for _, c := range []struct {
		name, service string
		st            *inventory.PodStatus
		stops         []string
		fault, note   string
	}{
		{"never ended", "authelia", status(0, nil), nil, "", "never ended"},
		{"restarted for a secret since the run began", "authelia", status(2, exit(1, 0, "Completed", restart)), nil, "", "last ended to restart for a new value of db.env (restart 2)"},
		{"killed by the OOM killer an hour ago", "authelia", status(1, exit(-60, 137, "OOMKilled", "")), nil, "was killed by the kernel's OOM killer (restart 1)", ""},
		{"stopped by the kubelet for its liveness probe, before the run", "authelia", status(3, exit(-20, 0, "Completed", "")), liveness, "was stopped by the kubelet in this pod (restart 3): Container authelia failed liveness probe", ""},
		{"stopped by the kubelet, then restarted for a secret", "authelia", status(4, exit(1, 0, "Completed", restart)), liveness, "was stopped by the kubelet in this pod (restart 4): Container authelia failed liveness probe", ""},
		{"crashed since the run began", "authelia", status(1, exit(1, 1, "Error", "authelia exited with status 1")), nil, "ended since the run began at 12:00:00, not to restart for a new secret value (restart 1): exit code 1 (Error) at 12:01:00", ""},
		{"killed by SIGKILL since the run began", "authelia", status(1, exit(1, 137, "Error", "")), nil, "ended since the run began at 12:00:00", ""},
		{"crashed before the run began", "authelia", status(1, exit(-3, 1, "Error", "authelia exited with status 1")), nil, "", "last ended before the run began at 12:00:00, (restart 1)"},
		{"lldap's first run ended, since the run began", "lldap", status(1, exit(1, 1, "Error", "lldap exited with status 1")), nil, "", "ended once, on its first run (restart 1)"},
		{"lldap's second run ended, since the run began", "lldap", status(2, exit(1, 1, "Error", "lldap exited with status 1")), nil, "ended since the run began", ""},
		{"lldap's first run killed by the OOM killer", "lldap", status(1, exit(-3, 137, "OOMKilled", "")), nil, "was killed by the kernel's OOM killer", ""},
		{"the node's container ended since the run began", "the node's image", status(1, exit(1, 0, "Completed", "")), nil, "ended since the run began", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fault, note := lastExitVerdict(c.service, c.st, c.stops, since)
			if c.fault == "" && fault != "" || !strings.Contains(fault, c.fault) {
				t.Errorf("fault %q, want one with %q", fault, c.fault)
			}
			if c.note == "" && note != "" || !strings.Contains(note, c.note) {
				t.Errorf("note %q, want one with %q", note, c.note)
			}
		})
	}
}

// Exits while a container is watched: a restart for a secret value goes
// on, anything else fails, and two exits between looks hide one.
func TestWatchedExitVerdict(t *testing.T) {
	since := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := since.Add(5 * time.Second)
	before := &inventory.PodStatus{RestartCount: 1, Exits: 1, Running: true, LastExit: &inventory.Exit{Code: 1, Reason: "Error", Message: "lldap exited with status 1", FinishedAt: since.Add(-time.Hour)}}
	after := func(exits int, e inventory.Exit) *inventory.PodStatus {
		e.FinishedAt = at
		return &inventory.PodStatus{RestartCount: exits, Exits: exits, Running: true, LastExit: &e}
	}
	restart := inventory.Exit{Reason: "Completed", Message: inventory.RestartMessagePrefix + "jwt"}
	for _, c := range []struct {
		name                string
		after               *inventory.PodStatus
		stops               []string
		fault, untold, note string
	}{
		{"a restart for a secret", after(2, restart), nil, "", "", "last ended to restart for a new value of jwt (restart 2)"},
		{"a crash before the run began, reported late", &inventory.PodStatus{RestartCount: 2, Exits: 2, Running: true, LastExit: &inventory.Exit{Code: 1, Reason: "Error", Message: "lldap exited with status 1", FinishedAt: since.Add(-time.Second)}}, nil, "", "", "last ended before the run began"},
		{"a crash", after(2, inventory.Exit{Code: 1, Reason: "Error", Message: "lldap exited with status 1"}), nil, "ended since the run began at 12:00:00", "", ""},
		{"a crash awaiting its restart", &inventory.PodStatus{RestartCount: 1, Exits: 2, LastExit: &inventory.Exit{Code: 2, Reason: "Error", FinishedAt: at}}, nil, "ended since the run began", "", ""},
		{"a restart for a secret after an exit not seen", after(3, restart), nil, "", "ended 2 times while watched, and the kubelet keeps only the last exit", ""},
		{"a stop by the kubelet after an exit not seen", after(3, inventory.Exit{Reason: "Completed"}), []string{"Container lldap failed liveness probe, will be restarted (event Killing at 12:00:04)"}, "was stopped by the kubelet in this pod (restart 3)", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fault, untold, note := watchedExitVerdict("lldap", before, c.after, c.stops, since)
			if c.fault == "" && fault != "" || !strings.Contains(fault, c.fault) {
				t.Errorf("fault %q, want one with %q", fault, c.fault)
			}
			if c.untold == "" && untold != "" || !strings.Contains(untold, c.untold) {
				t.Errorf("untold %q, want one with %q", untold, c.untold)
			}
			if c.note == "" && note != "" || !strings.Contains(note, c.note) {
				t.Errorf("note %q, want one with %q", note, c.note)
			}
		})
	}
}
