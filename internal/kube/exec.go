package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
)

// Exec runs argv in a container of a pod through the API server's exec
// subresource, over WebSocket with a fallback to SPDY for servers that do
// not speak it, as kubectl does, and returns what it printed. A command
// that exits non-zero is an error with its status and its stderr; a user
// that may not exec gets a poll.Permanent error naming the permission.
//
// The command gets an empty stdin. Without one, an exec over WebSocket
// that asks for both stdout and stderr lost all of a short command's
// output in about one run in five on a real kubelet (v1.37, through the
// API server's WebSocket-to-SPDY translation; SPDY alone, or stdout
// alone, lost none): `systemctl show` would print nothing now and then.
func (c *Client) Exec(ctx context.Context, namespace, pod, container string, argv []string) ([]byte, error) {
	executor, err := c.stream(namespace, pod, "exec", &corev1.PodExecOptions{Container: container, Command: argv, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(nil), Stdout: &stdout, Stderr: &stderr})
	what := fmt.Sprintf("exec %q in pod %s/%s (container %s)", strings.Join(argv, " "), namespace, pod, container)
	if err == nil {
		return stdout.Bytes(), nil
	}
	if isForbidden(err) {
		return nil, forbidden(what, "create on pods/exec", namespace)
	}
	return stdout.Bytes(), execError(what, err, stderr.String())
}

// execError is how an exec that did not exit 0 ended. A command killed by
// SIGKILL or SIGTERM (status 137 or 143) was, for the short commands the
// suites run, killed with its container: the runtime kills every process
// of a container that stops, as a restart for a new secret does. That is
// no answer of the command's (poll.NoAnswer, not an ExitError): a caller
// tries again, in the container once it runs again or in another one,
// rather than judge the status. A cold run of the suites saw a stat of a
// secret end so when its pod restarted for that secret.
func execError(what string, err error, stderr string) error {
	var exit utilexec.ExitError
	switch {
	case errors.As(err, &exit) && killedWithContainer(exit.ExitStatus()):
		return poll.NoAnswer(fmt.Errorf("%s: killed (status %d), as a stopping container's processes are: most likely its container stopped while it ran", what, exit.ExitStatus()))
	case errors.As(err, &exit):
		return &ExitError{What: what, Status: exit.ExitStatus(), Stderr: oneline.Of(stderr)}
	}
	return fmt.Errorf("%s: %w", what, Answered(err))
}

// killedWithContainer says an exit status is the runtime's for a process
// that SIGKILL or SIGTERM ended (128 plus the signal), the signals a
// stopping container's processes get.
func killedWithContainer(status int) bool {
	return status == 128+9 || status == 128+15
}

// ExitError is a command run through Exec that exited non-zero: its
// status and what it wrote on stderr, for a caller to judge by them
// rather than by the error's text.
type ExitError struct {
	// What names the command, the pod and the container.
	What   string
	Status int
	Stderr string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s: exited with status %d: %s", e.What, e.Status, e.Stderr)
}

// CommandMissing says err is an Exec whose command the container does
// not have (an image without a shell, say): the runtime's status 126 or
// 127, or its word that the file was not found.
func CommandMissing(err error) bool {
	var exit *ExitError
	if errors.As(err, &exit) && (exit.Status == 126 || exit.Status == 127) {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "executable file not found")
}

// ContainerState says on one line what a container that is not ready
// waits for or how it ended ("" when it does neither): a pod's trouble,
// as kubectl describe shows it.
func ContainerState(cs corev1.ContainerStatus) string {
	switch {
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
		return fmt.Sprintf("container %s waiting (%s: %s)", cs.Name, cs.State.Waiting.Reason, oneline.Of(cs.State.Waiting.Message))
	case cs.State.Terminated != nil:
		return fmt.Sprintf("container %s ended (%s, exit %d)", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
	}
	return ""
}

// Answered marks an error that tells of no answer (a timeout of the API
// server, the kubelet or the runtime; the API server too busy) as
// poll.NoAnswer, so that a wait retries it: a loaded machine is slow, not
// wrong. The API server passes the kubelet's timeouts on as text.
func Answered(err error) error {
	err = oneline.Wrap(err)
	text := err.Error()
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
		strings.Contains(text, "deadline exceeded") || strings.Contains(text, "i/o timeout") || strings.Contains(text, "handshake timeout") {
		return poll.NoAnswer(err)
	}
	return err
}

// stream is a streaming subresource of a pod (exec, attach), over
// WebSocket with a fallback to SPDY.
func (c *Client) stream(namespace, pod, subresource string, opts runtime.Object) (remotecommand.Executor, error) {
	req := c.Clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource(subresource).
		VersionedParams(opts, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, http.MethodPost, req.URL())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, fallBackToSPDY)
}

// isForbidden says the API server refused err for a permission: as a
// status, or as the text of a refused streaming upgrade.
func isForbidden(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || strings.Contains(err.Error(), "forbidden"))
}

// forbidden is the one-line error of what the kubeconfig's user may not
// do for lack of permission ("create on pods/exec"). Waiting does not
// grant a permission: it is poll.Permanent.
func forbidden(what, permission, namespace string) error {
	return poll.Permanent(Forbidden(what, permission, namespace))
}

// Forbidden names what was refused and the permission it needs, as every
// error of a missing permission says it.
func Forbidden(what, permission, namespace string) error {
	return fmt.Errorf("%s: forbidden: the kubeconfig's user needs %s in namespace %s", what, permission, namespace)
}

// fallBackToSPDY says a WebSocket upgrade was refused (an API server
// or a proxy without WebSockets for exec and port-forward): SPDY is tried
// next. client-go reports the refusal with k8s.io/streaming's error type,
// not apimachinery's older one of the same name.
func fallBackToSPDY(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}
