package kube

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/retry"

	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
)

// Probe is a container that the runner added to a running pod, and a
// session on its stdin and stdout. It is an ephemeral container: the
// Kubernetes way to add a process to a pod without changing its image or
// restarting it. It shares the pod's network, so it dials as the pod's
// own processes do. A pod keeps its ephemeral containers until it ends;
// a probe ends when its stdin closes.
type Probe struct {
	// Name is the container's, Pod its pod's.
	Name, Pod string

	stdin  *io.PipeWriter
	lines  chan []byte
	ended  chan struct{}
	endErr error
	mu     sync.Mutex
	stderr bytes.Buffer
}

// ProbeSpec says what a probe runs.
type ProbeSpec struct {
	// Image holds the probe's program; Args are given to its entrypoint.
	Image string
	Args  []string
	// Start bounds the wait for the container to run.
	Start time.Duration
}

// AddProbe adds a probe named name to a pod and attaches to it. Secrets
// go to it over Ask, never into the pod's spec. A user that may not add
// it, read the pod or attach gets a poll.Permanent error naming the
// permission.
func (c *Client) AddProbe(ctx context.Context, namespace, pod, name string, spec ProbeSpec) (*Probe, error) {
	what := fmt.Sprintf("add the probe %s to pod %s/%s", name, namespace, pod)
	pods := c.Clientset.CoreV1().Pods(namespace)
	// Nothing adds a probe again: each failure is final.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, pod, metav1.GetOptions{})
		if isForbidden(err) {
			return forbidden(what, "get on pods", namespace)
		} else if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, probeContainer(name, spec))
		_, err = pods.UpdateEphemeralContainers(ctx, pod, p, metav1.UpdateOptions{})
		if isForbidden(err) {
			return forbidden(what, "update on pods/ephemeralcontainers", namespace)
		}
		return err
	})
	if err == nil {
		err = c.waitRunning(ctx, namespace, pod, name, spec.Start)
	}
	var executor remotecommand.Executor
	if err == nil {
		executor, err = c.stream(namespace, pod, "attach", &corev1.PodAttachOptions{Container: name, Stdin: true, Stdout: true, Stderr: true})
	}
	switch {
	case poll.IsPermanent(err):
		return nil, err
	case err != nil:
		return nil, poll.Permanent(fmt.Errorf("%s: %s", what, oneline.Err(err)))
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &Probe{Name: name, Pod: pod, stdin: inW, lines: make(chan []byte), ended: make(chan struct{})}
	go func() {
		err := executor.StreamWithContext(context.WithoutCancel(ctx), remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: &lockedWriter{mu: &p.mu, w: &p.stderr}})
		if isForbidden(err) {
			err = Forbidden("attach to it", "create on pods/attach", namespace)
		}
		p.mu.Lock()
		p.endErr = err
		p.mu.Unlock()
		outW.Close()
	}()
	go func() {
		defer close(p.ended)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			p.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	return p, nil
}

// probeContainer is the probe's container: no privilege, nothing written,
// as a restricted namespace asks.
func probeContainer(name string, spec ProbeSpec) corev1.EphemeralContainer {
	yes, no := true, false
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: spec.Image, Args: spec.Args,
		Stdin: true, StdinOnce: true,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: &yes, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}}
}

// waitRunning waits for the probe's container to run. A container that
// cannot start (no image, a bad config) or that ended fails at once.
func (c *Client) waitRunning(ctx context.Context, namespace, pod, name string, within time.Duration) error {
	probe := poll.Probe{Endpoint: fmt.Sprintf("pod %s/%s", namespace, pod), Expect: "the ephemeral container " + name + " to run", Within: within}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		p, err := c.Clientset.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if isForbidden(err) {
			return forbidden("read its status", "get on pods", namespace)
		} else if err != nil {
			return err
		}
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name != name {
				continue
			}
			switch {
			case s.State.Running != nil:
				return nil
			case s.State.Terminated != nil:
				t := s.State.Terminated
				return poll.Permanent(fmt.Errorf("it ended (%s, exit %d): %s", t.Reason, t.ExitCode, oneline.Of(t.Message)))
			case s.State.Waiting != nil && cannotStart(s.State.Waiting.Reason):
				return poll.Permanent(fmt.Errorf("it cannot start: %s: %s", s.State.Waiting.Reason, oneline.Of(s.State.Waiting.Message)))
			case s.State.Waiting != nil:
				return poll.Saw("it waits: %s", s.State.Waiting.Reason)
			}
		}
		return poll.Saw("no status of it yet")
	})
}

// cannotStart says a waiting reason that waiting does not mend.
func cannotStart(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return true
	}
	return false
}

// Ask writes question, one line, to the probe's stdin and returns the
// line it answers.
func (p *Probe) Ask(ctx context.Context, question []byte) ([]byte, error) {
	written := make(chan error, 1)
	go func() {
		_, err := p.stdin.Write(append(bytes.TrimRight(question, "\n"), '\n'))
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			return nil, p.gone()
		}
	case <-p.ended:
		return nil, p.gone()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.Read(ctx)
}

// Read returns the probe's next line: an answer that came after its
// question's Ask gave up, say.
func (p *Probe) Read(ctx context.Context) ([]byte, error) {
	select {
	case line := <-p.lines:
		return line, nil
	case <-p.ended:
		return nil, p.gone()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// gone is the error of a probe whose session ended: final, as the
// session does not come back.
func (p *Probe) gone() error {
	p.mu.Lock()
	stderr, endErr := oneline.Of(p.stderr.String()), p.endErr
	p.mu.Unlock()
	why := "its session ended"
	if endErr != nil {
		why = oneline.Err(endErr)
	}
	if stderr != "" {
		why += "; it said: " + stderr
	}
	return poll.Permanent(fmt.Errorf("the probe %s in pod %s: %s", p.Name, p.Pod, why))
}

// Close ends the probe: its stdin closes, and its program exits.
func (p *Probe) Close() {
	p.stdin.Close()
	select {
	case <-p.ended:
	case <-time.After(10 * time.Second):
	}
}

// lockedWriter lets Probe read what the stream writes meanwhile.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
