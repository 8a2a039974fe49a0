package scenarios

import (
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/poll"
)

func TestParseSystemctlShow(t *testing.T) {
	out := "Id=a.service\nLoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nExecMainStartTimestampMonotonic=12\n\n" +
		"Id=b.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\nExecMainStartTimestampMonotonic=0\n"
	states, err := parseSystemctlShow([]byte(out), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if !states[0].ran() || states[0].neverRan() || states[1].ran() || !states[1].neverRan() {
		t.Errorf("a ran %v never %v; b ran %v never %v", states[0].ran(), states[0].neverRan(), states[1].ran(), states[1].neverRan())
	}
	if _, err := parseSystemctlShow([]byte(out), []string{"a"}); err == nil || !strings.Contains(err.Error(), "printed 2 units for the 1 asked") {
		t.Errorf("a count mismatch: %v", err)
	}
	if _, err := parseSystemctlShow([]byte("Failed to connect to bus\n"), []string{"a"}); err == nil || !strings.Contains(err.Error(), "no property") {
		t.Errorf("not systemctl show: %v", err)
	}
}

// TestUnitStates names, for each state systemd reports, whether the unit
// counts as having run (where its list puts it) or as never started (where
// it does not).
func TestUnitStates(t *testing.T) {
	cases := []struct {
		name          string
		state         unitState
		ran, neverRan bool
	}{
		{"running", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "active", "ExecMainStartTimestampMonotonic": "5"}, true, false},
		{"starting, or restarting after a crash", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "activating", "SubState": "auto-restart", "ExecMainStartTimestampMonotonic": "5"}, false, false},
		{"one-time unit that succeeded", unitState{"Type": "oneshot", "LoadState": "loaded", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "5"}, true, false},
		{"service that exited cleanly", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "5"}, false, false},
		{"one-time unit that failed", unitState{"Type": "oneshot", "LoadState": "loaded", "ActiveState": "failed", "Result": "exit-code", "ExecMainStartTimestampMonotonic": "5"}, false, false},
		{"never started", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "0"}, false, true},
		{"not in the image", unitState{"LoadState": "not-found", "ActiveState": "inactive"}, false, true},
		{"masked", unitState{"LoadState": "masked", "ActiveState": "inactive"}, false, true},
		{"masked while it runs", unitState{"Type": "simple", "LoadState": "masked", "ActiveState": "active", "ExecMainStartTimestampMonotonic": "5"}, true, false},
		{"removed after it ran", unitState{"LoadState": "not-found", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "5"}, false, false},
		{"stopped after running", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "inactive", "Result": "signal", "ExecMainStartTimestampMonotonic": "5"}, false, false},
	}
	for _, c := range cases {
		if c.state.ran() != c.ran || c.state.neverRan() != c.neverRan {
			t.Errorf("%s: ran %v, never ran %v; want %v, %v", c.name, c.state.ran(), c.state.neverRan(), c.ran, c.neverRan)
		}
	}
}

// TestArmedByATrigger: a unit that a timer, socket or path starts has not
// run yet where its trigger waits; it counts as placed there, and only
// while the trigger is active.
func TestArmedByATrigger(t *testing.T) {
	cleanup := unitState{"Type": "oneshot", "LoadState": "loaded", "ActiveState": "inactive", "ExecMainStartTimestampMonotonic": "0", "TriggeredBy": "cleanup.timer"}
	socket := unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "inactive", "ExecMainStartTimestampMonotonic": "0", "TriggeredBy": "other.path echo.socket"}
	triggers := map[string]unitState{"cleanup.timer": {"ActiveState": "active"}, "echo.socket": {"ActiveState": "active"}, "other.path": {"ActiveState": "inactive"}}
	if got := cleanup.armedBy(triggers); got != "cleanup.timer" {
		t.Errorf("timer-started: armed by %q", got)
	}
	if got := socket.armedBy(triggers); got != "echo.socket" {
		t.Errorf("socket-started: armed by %q", got)
	}
	if got := cleanup.armedBy(map[string]unitState{"cleanup.timer": {"ActiveState": "inactive"}}); got != "" {
		t.Errorf("a stopped timer arms nothing: %q", got)
	}
	if !cleanup.neverRan() {
		t.Error("a timer-started unit not run yet never ran: where its list does not permit it, that is right")
	}
	if got := (unitState{"ActiveState": "inactive"}).armedBy(triggers); got != "" {
		t.Errorf("no trigger: %q", got)
	}
}

// TestStartedBy: what will start a unit is a trigger first, else a target
// that wants or requires it, active in either case.
func TestStartedBy(t *testing.T) {
	web := unitState{"ActiveState": "inactive", "ExecMainStartTimestampMonotonic": "0", "TriggeredBy": "web.timer", "WantedBy": "multi-user.target"}
	active := map[string]unitState{"web.timer": {"ActiveState": "active"}, "multi-user.target": {"ActiveState": "active"}}
	if got := web.startedBy(active); got != "web.timer" {
		t.Errorf("a trigger first: %q", got)
	}
	active["web.timer"] = unitState{"ActiveState": "inactive"}
	if got := web.startedBy(active); got != "multi-user.target" {
		t.Errorf("a target that wants it: %q", got)
	}
	required := unitState{"ActiveState": "inactive", "RequiredBy": "multi-user.target"}
	if got := required.startedBy(active); got != "multi-user.target" {
		t.Errorf("a target that requires it: %q", got)
	}
	if got := web.startedBy(map[string]unitState{}); got != "" {
		t.Errorf("nothing active: %q", got)
	}
}

// TestBootEnded: the units are judged once the pod's systemd has booted;
// a degraded system has booted too. A system still booting has not
// answered yet: a wait goes on past its window.
func TestBootEnded(t *testing.T) {
	for out, want := range map[string]string{
		"SystemState=running\n":      "",
		"SystemState=degraded\n":     "",
		"SystemState=starting\n":     "saw pod p still booting (systemd is starting)",
		"SystemState=initializing\n": "saw pod p still booting (systemd is initializing)",
		"Failed to connect to bus\n": `pod p: systemctl show printed "Failed to connect to bus\n", not the system's state`,
	} {
		got := ""
		if err := bootEnded("p", []byte(out)); err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%q: %q, want %q", out, got, want)
		}
		if err := bootEnded("p", []byte(out)); err != nil && poll.IsNoAnswer(err) != strings.Contains(out, "SystemState=") {
			t.Errorf("%q: no answer yet is %v", out, poll.IsNoAnswer(err))
		}
	}
}

// TestPlacement: each unit's cell of the matrix, and the fault named,
// from systemd's record and the unit's list.
func TestPlacement(t *testing.T) {
	timer := map[string]unitState{"renew.timer": {"ActiveState": "active"}}
	failed := unitState{"Type": "oneshot", "LoadState": "loaded", "ActiveState": "failed", "Result": "exit-code", "ExecMainStartTimestampMonotonic": "5", "TriggeredBy": "renew.timer"}
	for _, c := range []struct {
		name              string
		state             unitState
		permitted, will   bool
		cell, did, reason string
	}{
		{"running where permitted", unitState{"ActiveState": "active", "ExecMainStartTimestampMonotonic": "5"}, true, false, "active", "", ""},
		{"a timer's unit not run yet", unitState{"Type": "oneshot", "ActiveState": "inactive", "ExecMainStartTimestampMonotonic": "0", "TriggeredBy": "renew.timer"}, true, false, "armed by renew.timer", "", ""},
		{"a timer's unit that ran to success", unitState{"Type": "oneshot", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "5", "TriggeredBy": "renew.timer"}, true, false, "ran", "", ""},
		{"a timer's unit whose run failed", failed, true, false, "FAILED", "failed", "where its list puts it: its last run failed (Result=exit-code, LoadState=loaded ActiveState=failed SubState=); renew.timer will start it again, which does not undo the failed run"},
		{"a service that stopped with a signal, no trigger", unitState{"Type": "simple", "ActiveState": "inactive", "Result": "signal", "ExecMainStartTimestampMonotonic": "5"}, true, false, "FAILED", "failed", "where its list puts it: its last run failed (Result=signal, LoadState= ActiveState=inactive SubState=)"},
		{"stopped by systemctl stop", unitState{"Type": "simple", "LoadState": "loaded", "ActiveState": "inactive", "Result": "success", "ExecMainStartTimestampMonotonic": "5"}, true, false, "NOT ACTIVE", "is not active", "where its list puts it (LoadState=loaded ActiveState=inactive SubState=)"},
		{"forbidden, masked while it runs", unitState{"LoadState": "masked", "ActiveState": "active", "SubState": "running", "ExecMainStartTimestampMonotonic": "5"}, false, false, "WRONGLY active", "ran", "where its list does not permit it (LoadState=masked ActiveState=active SubState=running)"},
		{"forbidden, failed", failed, false, false, "WRONGLY failed", "ran", "where its list does not permit it (LoadState=loaded ActiveState=failed SubState=)"},
		{"forbidden, armed, its conditions holding", unitState{"ActiveState": "inactive", "ExecMainStartTimestampMonotonic": "0", "TriggeredBy": "renew.timer"}, false, true, "WRONGLY armed by renew.timer", "will start", "where its list does not permit it: renew.timer is active and starts it, and its conditions hold there"},
		{"forbidden, never ran", unitState{"LoadState": "masked", "ActiveState": "inactive"}, false, false, "-", "", ""},
	} {
		got := placement(c.state, c.permitted, c.will, timer)
		if got != (placed{c.cell, c.did, c.reason}) {
			t.Errorf("%s: %+v\nwant %+v", c.name, got, placed{c.cell, c.did, c.reason})
		}
	}
}
