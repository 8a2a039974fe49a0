package world

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/inventory"
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

// TestKubeletStop: the kubelet's Killing event of the container, within
// the run an exit ended, is its stop; another container's, or one of
// another run, is not.
func TestKubeletStop(t *testing.T) {
	at := func(s string) time.Time {
		tm, _ := time.Parse(time.TimeOnly, s)
		return tm
	}
	event := func(container, first, last string) corev1.Event {
		return corev1.Event{Reason: kubeletKilling, Message: "Container " + container + " failed liveness probe, will be restarted",
			InvolvedObject: corev1.ObjectReference{FieldPath: "spec.containers{" + container + "}"},
			FirstTimestamp: metav1.NewTime(at(first)), LastTimestamp: metav1.NewTime(at(last))}
	}
	exit := &inventory.Exit{StartedAt: at("10:00:00.400"), FinishedAt: at("10:05:00.900")}
	for _, c := range []struct {
		name   string
		events []corev1.Event
		want   string
	}{
		{"in the run", []corev1.Event{event("lldap", "10:04:59", "10:04:59")}, "Container lldap failed liveness probe, will be restarted (event Killing at 10:04:59)"},
		{"the exit's second", []corev1.Event{event("lldap", "10:05:00", "10:05:00")}, "Container lldap failed liveness probe, will be restarted (event Killing at 10:05:00)"},
		{"after the exit", []corev1.Event{event("lldap", "10:05:01", "10:05:01")}, ""},
		{"the start's second, the run before's", []corev1.Event{event("lldap", "10:00:00", "10:00:00")}, ""},
		{"repeated across runs", []corev1.Event{event("lldap", "09:50:00", "10:20:00")}, "Container lldap failed liveness probe, will be restarted (event Killing at 10:20:00)"},
		{"another container", []corev1.Event{event("secrets", "10:04:59", "10:04:59")}, ""},
		{"an earlier run", []corev1.Event{event("lldap", "09:50:00", "09:59:58")}, ""},
		{"a later run", []corev1.Event{event("lldap", "10:06:00", "10:06:00")}, ""},
		{"none", nil, ""},
		{"of events.k8s.io", []corev1.Event{{Reason: kubeletKilling, Message: "Stopping container lldap", InvolvedObject: corev1.ObjectReference{FieldPath: "spec.containers{lldap}"},
			EventTime: metav1.NewMicroTime(at("10:03:00"))}}, "Stopping container lldap (event Killing at 10:03:00)"},
	} {
		if got := kubeletStop(c.events, "lldap", exit); got != c.want {
			t.Errorf("%s:\n got  %q\n want %q", c.name, got, c.want)
		}
	}
}
