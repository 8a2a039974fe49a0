package world

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
)

// A pod of a cluster tells its history through its status: the kubelet's
// count of restarts, its last exit, the back-off it waits out.

// podStatus reads a container's status and history from the pod's status.
func (c *Cluster) podStatus(ctx context.Context, pod inventory.Endpoint, container string) (*inventory.PodStatus, error) {
	got, err := getPod(ctx, c, pod)
	if err != nil {
		return nil, err
	}
	return historyIn(got, c.Namespace, container)
}

// podGone is why a pod whose history a scenario follows has no more of
// it to tell.
func podGone(ns, name string) error {
	return poll.Permanent(fmt.Errorf("pod %s/%s is gone: it was replaced by a new pod, not restarted in the same pod", ns, name))
}

// historyIn reads a container's history from a pod read from namespace
// ns.
func historyIn(got *corev1.Pod, ns, container string) (*inventory.PodStatus, error) {
	// The sidecar is an init container that keeps running (restartPolicy
	// Always): its status is among the init containers'.
	for _, cs := range append(slices.Clone(got.Status.InitContainerStatuses), got.Status.ContainerStatuses...) {
		if cs.Name == container {
			return containerHistory(got, cs), nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s reports no status of its container %s yet", ns, got.Name, container)
}

// Histories reads the history of container ct of each of pods in c, by
// pod name, from one list of the namespace's pods: a watch over many
// pods asks the API once per look, not once per pod. A pod that is gone,
// or that is being deleted, was replaced, not restarted in the same pod.
func Histories(ctx context.Context, c *Cluster, pods []inventory.Endpoint, ct Container) (map[string]*inventory.PodStatus, error) {
	ns := c.Namespace
	list, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, ObjectError("Pod", ns, "*", "list", err)
	}
	byName := map[string]*corev1.Pod{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	out := map[string]*inventory.PodStatus{}
	for _, pod := range pods {
		got := byName[pod.Name]
		switch {
		case got == nil:
			return nil, podGone(ns, pod.Name)
		case got.DeletionTimestamp != nil:
			return nil, poll.Permanent(fmt.Errorf("pod %s/%s is being deleted (since %s): it is replaced, not restarted in the same pod", ns, pod.Name, got.DeletionTimestamp.UTC().Format(time.TimeOnly)))
		}
		st, err := historyIn(got, ns, c.container(pod, ct))
		if err != nil {
			return nil, err
		}
		out[pod.Name] = st
	}
	return out, nil
}

// getPod reads a pod whose history a scenario follows: one that is gone
// was replaced, and has no more history to tell.
func getPod(ctx context.Context, c *Cluster, pod inventory.Endpoint) (*corev1.Pod, error) {
	ns := c.Namespace
	got, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, podGone(ns, pod.Name)
	}
	if err != nil {
		return nil, ObjectError("Pod", ns, pod.Name, "get", err)
	}
	return got, nil
}

// containerHistory reads a container's status as the pod's history of
// it. The restart count alone misses an exit that waits in the kubelet's
// crash-loop back-off: the count rises only when the container starts
// again, up to five minutes later on a stock kubelet.
func containerHistory(pod *corev1.Pod, c corev1.ContainerStatus) *inventory.PodStatus {
	st := &inventory.PodStatus{Pod: pod.Name, UID: string(pod.UID), RestartCount: int(c.RestartCount), Exits: int(c.RestartCount)}
	if c.State.Running != nil && (c.Started == nil || *c.Started) {
		st.StartedAt, st.Running = c.State.Running.StartedAt.Time, true
	}
	last := c.LastTerminationState.Terminated
	switch {
	case c.State.Terminated != nil:
		// Its latest run ended, and no new one is counted yet. A kubelet
		// shows a sidecar that exited 0 so through its whole back-off,
		// naming none: an init container's success, to its status.
		last = c.State.Terminated
		st.Exits++
	case c.State.Waiting != nil && last != nil && c.State.Waiting.Reason != "ContainerCreating":
		// A new run is made only after the back-off: this exit is not
		// in the count yet. (A created run waits as ContainerCreating,
		// already counted.)
		st.Exits++
		st.BackOff = backOffOf(c.State.Waiting.Message)
	}
	if last != nil {
		st.LastExit = &inventory.Exit{Code: int(last.ExitCode), Reason: last.Reason, StartedAt: last.StartedAt.Time, FinishedAt: last.FinishedAt.Time, Message: strings.TrimSpace(last.Message)}
	}
	return st
}

// backOffOf reads the kubelet's wait from a CrashLoopBackOff message:
// "back-off 40s restarting failed container=…".
func backOffOf(message string) time.Duration {
	rest, ok := strings.CutPrefix(message, "back-off ")
	if !ok {
		return 0
	}
	word, _, _ := strings.Cut(rest, " ")
	d, err := time.ParseDuration(word)
	if err != nil {
		return 0
	}
	return d
}

// KubeletStop reads the pod's events for the kubelet's word that it
// stopped the container during the run that e ended. An exit that says
// nothing of itself may be the kubelet's stop: a failed liveness probe
// ends a service as quietly as a restart, and a restart it is not.
func (c *Cluster) KubeletStop(ctx context.Context, pod inventory.Endpoint, ct Container, e *inventory.Exit) (string, error) {
	events, err := c.Clientset.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name + ",reason=" + kubeletKilling})
	if err != nil {
		return "", ObjectError("Event", c.Namespace, pod.Name+" (the pod's)", "list", err)
	}
	return kubeletStop(events.Items, c.container(pod, ct), e), nil
}

// kubeletKilling is the reason of the kubelet's event when it stops a
// container: "Container x failed liveness probe, will be restarted",
// "Stopping container x".
const kubeletKilling = "Killing"

// kubeletStop is the message of the kubelet's Killing event of container
// that falls within the run that e ended; "" for none. The events keep
// seconds: the kubelet stops a container before it exits, so an event
// after the exit's second is a later run's; a previous run's stop may
// share the second this run started in, and no probe stops a run in its
// first second. A repeated event spans its first and last time: a
// series of stops around this run is the kubelet stopping the container
// run after run.
func kubeletStop(events []corev1.Event, container string, e *inventory.Exit) string {
	from, to := e.StartedAt.Truncate(time.Second).Add(time.Second), e.FinishedAt
	for _, ev := range events {
		if !stopOf(ev, container) {
			continue
		}
		first, last := eventSpan(ev)
		if !last.Before(from) && !first.After(to) {
			return stopText(ev, last)
		}
	}
	return ""
}

// stopOf says whether an event is the kubelet's stop of container.
func stopOf(ev corev1.Event, container string) bool {
	return ev.Reason == kubeletKilling && strings.HasSuffix(ev.InvolvedObject.FieldPath, "{"+container+"}")
}

// eventSpan is when an event first and last happened.
func eventSpan(ev corev1.Event) (first, last time.Time) {
	first, last = ev.FirstTimestamp.Time, ev.LastTimestamp.Time
	if last.IsZero() {
		// An event of events.k8s.io's kind keeps its times there.
		first, last = ev.EventTime.Time, ev.EventTime.Time
		if ev.Series != nil {
			last = ev.Series.LastObservedTime.Time
		}
	}
	if first.IsZero() {
		first = last
	}
	return first, last
}

// stopText names a stop for a report, at the time it last happened.
func stopText(ev corev1.Event, last time.Time) string {
	text := fmt.Sprintf("%s (event %s at %s", strings.TrimSpace(ev.Message), ev.Reason, last.UTC().Format(time.TimeOnly))
	if ev.Count > 1 {
		text += fmt.Sprintf(", %d times", ev.Count)
	}
	return text + ")"
}

// KubeletStops are the kubelet's stops of container ct of each of pods
// in c that its events still keep, by pod name, from one list of the
// namespace's events: a stop of a pod that runs on restarted the
// container there (a failed liveness or startup probe, a spec changed in
// place), whatever exits came after it. The API server keeps events for
// an hour by default (--event-ttl).
func KubeletStops(ctx context.Context, c *Cluster, pods []inventory.Endpoint, ct Container) (map[string][]string, error) {
	events, err := c.Clientset.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + kubeletKilling})
	if err != nil {
		return nil, ObjectError("Event", c.Namespace, "* (the pods')", "list", err)
	}
	out := map[string][]string{}
	for _, pod := range pods {
		for _, ev := range events.Items {
			o := ev.InvolvedObject
			if o.Kind != "Pod" || o.Name != pod.Name || (pod.UID != "" && string(o.UID) != pod.UID) || !stopOf(ev, c.container(pod, ct)) {
				continue
			}
			_, last := eventSpan(ev)
			out[pod.Name] = append(out[pod.Name], stopText(ev, last))
		}
	}
	return out, nil
}

// CompanionHistory is, from one read of a pod, the history of its
// companion beside its service's, and how long the kubelet lets a
// container take to stop: the bound within which two ends are one stop.
type CompanionHistory struct {
	Companion, Service *inventory.PodStatus
	// Grace is the pod's terminationGracePeriodSeconds.
	Grace time.Duration
}

// Companion reads the companion's and the service's histories in one
// look at the pod, so that the two are of one moment.
func (c *Cluster) Companion(ctx context.Context, pod inventory.Endpoint) (*CompanionHistory, error) {
	got, err := getPod(ctx, c, pod)
	if err != nil {
		return nil, err
	}
	ns := c.Namespace
	h := &CompanionHistory{Grace: 30 * time.Second} // the API's default
	if g := got.Spec.TerminationGracePeriodSeconds; g != nil {
		h.Grace = time.Duration(*g) * time.Second
	}
	for _, cs := range got.Status.ContainerStatuses {
		switch cs.Name {
		case plan.ContainerCompanion:
			h.Companion = containerHistory(got, cs)
		case pod.Container:
			h.Service = containerHistory(got, cs)
		}
	}
	for _, c := range []struct {
		name string
		st   *inventory.PodStatus
	}{{pod.Container, h.Service}, {plan.ContainerCompanion, h.Companion}} {
		if c.st == nil {
			return nil, fmt.Errorf("pod %s/%s reports no status of its container %s yet", ns, pod.Name, c.name)
		}
	}
	return h, nil
}
