package world

import (
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
// kubelet already counted is not counted twice. A sidecar that exited 0
// shows its exit, and no back-off, until it runs again.
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
		awaits  bool
	}{
		{"never exited", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at("10:00:00")}}}, 0, 0, "no exit recorded", false},
		{"just exited", corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Terminated: exited}}, 2, 0, "exit code 0 (Completed) at 10:05:00", true},
		{"waits in back-off", corev1.ContainerStatus{RestartCount: 3,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=lldap pod=p_ns(u)"}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 40 * time.Second, "exit code 0 (Completed) at 10:05:00", true},
		{"created again", corev1.ContainerStatus{RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 0, "exit code 0 (Completed) at 10:05:00", false},
		{"started, its startup probe not passed", corev1.ContainerStatus{RestartCount: 4, Started: new(bool),
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at("10:05:40")}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 0, "exit code 0 (Completed) at 10:05:00", false},
		{"runs again", corev1.ContainerStatus{RestartCount: 4,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at("10:05:40")}},
			LastTerminationState: corev1.ContainerState{Terminated: exited}}, 4, 0, "exit code 0 (Completed) at 10:05:00", false},
	}
	for _, c := range cases {
		st := containerHistory(pod, c.status)
		if st.ExitCount() != c.exits || st.BackOff != c.backOff || st.LastExit.String() != c.last || st.AwaitsRestart() != c.awaits {
			t.Errorf("%s: %d exits, back-off %s, last %q, awaits a restart %v; want %d, %s, %q, %v", c.name, st.ExitCount(), st.BackOff, st.LastExit, st.AwaitsRestart(), c.exits, c.backOff, c.last, c.awaits)
		}
	}
}

// The kubelet's termination message is the exit's own word: an exit for a
// secret with restart names its file.
func TestContainerHistoryKeepsTheMessage(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}
	said := corev1.ContainerStatus{RestartCount: 1, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", Message: "restart: a new value of jwt\n"}}}
	if files, ok := containerHistory(pod, said).LastExit.RestartFor(); !ok || !slices.Equal(files, []string{"jwt"}) {
		t.Errorf("a restart for jwt: %q, %v", files, ok)
	}
	crashed := said
	crashed.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: 7, Reason: "Error", Message: "pod p: the service exited with status 7"}
	st := containerHistory(pod, crashed)
	if _, ok := st.LastExit.RestartFor(); ok || !strings.Contains(st.LastExit.String(), `saying "pod p: the service exited with status 7"`) {
		t.Errorf("a crash: %s", st.LastExit)
	}
}
