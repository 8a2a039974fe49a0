package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestContainerHistoryCountsExitsInBackOff: an exit counts from the
// moment the kubelet records it, also while the container waits in its
// crash-loop back-off and the restart count has not risen; a run that the
// kubelet already counted is not counted twice.
func TestContainerHistoryCountsExitsInBackOff(t *testing.T) {
	at := func(s string) metav1.Time {
		tm, _ := time.Parse(time.TimeOnly, s)
		return metav1.NewTime(tm)
	}
	exited := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: at("10:00:00"), FinishedAt: at("10:05:00")}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
	cases := []struct {
		name    string
		status  corev1.ContainerStatus
		exits   int
		backOff time.Duration
		last    string
	}{
		{"never exited", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at("10:00:00")}}}, 0, 0, "no exit recorded"},
		{"just exited", corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Terminated: exited}}, 2, 0, "exit code 0 (Completed) at 10:05:00"},
		{"waits in back-off", corev1.ContainerStatus{RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=lldap pod=p_ns(u)"}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 40 * time.Second, "exit code 0 (Completed) at 10:05:00"},
		{"created again", corev1.ContainerStatus{RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 0, "exit code 0 (Completed) at 10:05:00"},
		{"runs again", corev1.ContainerStatus{RestartCount: 4,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at("10:05:40")}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 0, "exit code 0 (Completed) at 10:05:00"},
	}
	for _, c := range cases {
		st := containerHistory(pod, c.status)
		if st.ExitCount() != c.exits || st.BackOff != c.backOff || st.LastExit.String() != c.last {
			t.Errorf("%s: %d exits, back-off %s, last %q; want %d, %s, %q", c.name, st.ExitCount(), st.BackOff, st.LastExit, c.exits, c.backOff, c.last)
		}
	}
}

func TestUsernameTime(t *testing.T) {
	for user, want := range map[string]int64{
		"v-token-lldap-AbCdEfGhIjKlMnOpQrSt-1764633600": 1764633600,
		"v-root-authelia-x-1764633601":                  1764633601,
		"lldap_static":                                  0,
		"v-token-lldap-12":                              0,
	} {
		got, ok := usernameTime(user)
		if got != want || ok != (want != 0) {
			t.Errorf("usernameTime(%q) = %d, %v; want %d", user, got, ok, want)
		}
	}
}

// The pods' leases are matched by time alone: two pods of one second hold
// the two leases of that second; a third lease there is another
// consumer's too, and nothing is revoked.
func TestMatchLeases(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(1764633000+sec, 0) }
	users := map[string]string{"lldap-0": "v-token-lldap-a-1764634000", "lldap-1": "v-token-lldap-b-1764634000"}
	got, err := matchLeases("database/creds/lldap", map[string]time.Time{"l/1": at(1000), "l/2": at(1001), "l/old": at(900)}, users)
	if err != nil || !slices.Equal(got, []string{"l/1", "l/2"}) {
		t.Errorf("got %v, %v", got, err)
	}
	_, err = matchLeases("database/creds/lldap", map[string]time.Time{"l/1": at(1000), "l/2": at(1000), "l/other": at(1001)}, users)
	var inc *InconclusiveError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "3 leases of database/creds/lldap were issued in the seconds the 2 pods' credentials were made") {
		t.Errorf("another consumer's lease in the pods' second: %v", err)
	}
	if _, err := matchLeases("p", map[string]time.Time{"l/1": at(5)}, users); err == nil || !strings.Contains(err.Error(), "no lease of p was issued") {
		t.Errorf("no lease: %v", err)
	}
}
