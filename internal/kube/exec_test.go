package kube

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/fediversity/podroles/internal/poll"
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

// A command killed with its container is no answer, to be tried again;
// one that exited of itself, even by a signal's status it chose, less
// than 128 or another signal, is the command's verdict.
func TestExecKilledWithItsContainer(t *testing.T) {
	const what = `exec "stat" in pod ns/p (container lldap)`
	for _, c := range []struct {
		status   int
		noAnswer bool
	}{
		{137, true},
		{143, true},
		{1, false},
		{130, false}, // SIGINT: not what a stopping container's processes get
		{127, false},
	} {
		err := execError(what, utilexec.CodeExitError{Err: errors.New("command terminated with non-zero exit code"), Code: c.status}, "said\nthis")
		var exit *ExitError
		switch {
		case c.noAnswer && (!poll.IsNoAnswer(err) || errors.As(err, &exit)):
			t.Errorf("status %d: %v is not a bare no-answer", c.status, err)
		case c.noAnswer && err.Error() != what+fmt.Sprintf(": killed (status %d), as a stopping container's processes are: most likely its container stopped while it ran", c.status):
			t.Errorf("status %d: %v", c.status, err)
		case !c.noAnswer && (poll.IsNoAnswer(err) || !errors.As(err, &exit) || exit.Status != c.status || exit.Stderr != "said this"):
			t.Errorf("status %d: %v, want the command's exit", c.status, err)
		}
	}
	if err := execError(what, errors.New("i/o timeout"), ""); !poll.IsNoAnswer(err) {
		t.Errorf("a timeout: %v", err)
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
