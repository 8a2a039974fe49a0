package kube

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// An exec's exit is judged by its status, not its text; a command the
// image lacks is told apart, as the runtime says it.
func TestExitErrorAndCommandMissing(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &ExitError{What: `exec "sh" in pod ns/p (container c)`, Status: 3, Stderr: "no tool"})
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Status != 3 || err.Error() != `wrapped: exec "sh" in pod ns/p (container c): exited with status 3: no tool` {
		t.Errorf("got %v", err)
	}
	for _, c := range []struct {
		err     error
		missing bool
	}{
		{&ExitError{Status: 127}, true},
		{&ExitError{Status: 126}, true},
		{&ExitError{Status: 1}, false},
		{errors.New(`OCI runtime exec failed: exec: "sh": executable file not found in $PATH`), true},
		{errors.New("connection reset by peer"), false},
		{nil, false},
	} {
		if got := CommandMissing(c.err); got != c.missing {
			t.Errorf("CommandMissing(%v) = %v", c.err, got)
		}
	}
}

func TestContainerState(t *testing.T) {
	waiting := corev1.ContainerStatus{Name: "authelia", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "back-off\npulling"}}}
	ended := corev1.ContainerStatus{Name: "lldap", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}}
	for cs, want := range map[*corev1.ContainerStatus]string{
		&waiting:    "container authelia waiting (ImagePullBackOff: back-off pulling)",
		&ended:      "container lldap ended (Error, exit 1)",
		{Name: "x"}: "",
	} {
		if got := ContainerState(*cs); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
