package kube

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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
// own processes do. A pod keeps its ephemeral containers until it ends,
// and a container cannot be removed or started again: one probe per
// image stays in the pod, idle between sessions, and every later run
// attaches to it, so that runs after the first add nothing to the pod.
type Probe struct {
	// Name is the container's, Pod its pod's.
	Name, Pod string

	stdin  *io.PipeWriter
	lines  chan []byte
	ended  chan struct{}
	stop   context.CancelFunc
	endErr error
	mu     sync.Mutex
	stderr bytes.Buffer
}

// ProbeSpec says what a probe runs.
type ProbeSpec struct {
	// Image holds the probe's program; Args are given to its entrypoint.
	// The program must serve one session after another on its stdin,
	// and never end by itself.
	Image string
	Args  []string
	// Start bounds the wait for the container to run.
	Start time.Duration
}

// probeName is the name of a probe of spec: prefix and a hash of its image
// and arguments, so that a runner of another image adds its own, and n
// counts the probes of that spec that ended (a pod keeps them).
func probeName(prefix string, spec ProbeSpec, n int) string {
	h := sha256.Sum256([]byte(spec.Image + "\x00" + strings.Join(spec.Args, "\x00")))
	name := prefix + "-" + hex.EncodeToString(h[:4])
	if n > 0 {
		name += "-" + strconv.Itoa(n+1)
	}
	return name
}

// Probe attaches to the probe of spec in a pod: the one a run before
// added, where it still runs, or a new one (named after prefix). Secrets
// go to it over Ask, never into the pod's spec. A user that may not add
// it, read the pod or attach gets a poll.Permanent error naming the
// permission.
func (c *Client) Probe(ctx context.Context, namespace, pod, prefix string, spec ProbeSpec) (*Probe, error) {
	what := fmt.Sprintf("add a probe to pod %s/%s", namespace, pod)
	pods := c.Clientset.CoreV1().Pods(namespace)
	var name string
	// Nothing adds a probe again: each failure is final.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(ctx, pod, metav1.GetOptions{})
		if isForbidden(err) {
			return forbidden(what, "get on pods", namespace)
		} else if err != nil {
			return err
		}
		var found bool
		if name, found = reusableProbe(p, prefix, spec); found {
			return nil
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
	// The session lasts until Close: the probe's stdin stays open for the
	// next session, so nothing ends it from the pod's side.
	sessionCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p := &Probe{Name: name, Pod: pod, stdin: inW, lines: make(chan []byte), ended: make(chan struct{}), stop: stop}
	go func() {
		err := executor.StreamWithContext(sessionCtx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: &lockedWriter{mu: &p.mu, w: &p.stderr}})
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
			select {
			case p.lines <- bytes.Clone(sc.Bytes()):
			case <-sessionCtx.Done():
				return
			}
		}
	}()
	return p, nil
}

// reusableProbe is the name of the probe of spec in pod that a session can
// attach to (running, or about to), and true; else the name of a new one
// and false. A probe that ended stays in the pod under its name.
func reusableProbe(pod *corev1.Pod, prefix string, spec ProbeSpec) (string, bool) {
	ended := map[string]bool{}
	for _, s := range pod.Status.EphemeralContainerStatuses {
		ended[s.Name] = s.State.Terminated != nil
	}
	for n := 0; ; n++ {
		name := probeName(prefix, spec, n)
		inSpec := slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name })
		switch {
		case !inSpec:
			return name, false
		case !ended[name]:
			return name, true
		}
	}
}

// probeContainer is the probe's container: no privilege, nothing written,
// as a restricted namespace asks.
func probeContainer(name string, spec ProbeSpec) corev1.EphemeralContainer {
	yes, no := true, false
	return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: spec.Image, Args: spec.Args,
		// Its stdin stays open between sessions: the probe serves the
		// next run's.
		Stdin: true, StdinOnce: false,
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

// Close ends the session; the probe stays in the pod, idle, for the
// next run.
func (p *Probe) Close() {
	p.stdin.Close()
	p.stop()
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
