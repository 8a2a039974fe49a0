package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
)

// A pod of the local environment tells about itself through files (its
// status file, its secrets folder); a pod of a cluster through the API
// server (its status, exec). These helpers let the suites ask either.

func podStatus(ctx context.Context, s *State, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	return s.world().status(ctx, pod, serviceContainer)
}

// PodStatus reads what a pod reports of its service: its UID, which stays
// while the pod lives, and the restart count of its service's container;
// from the local environment's status file, or from the pod's status in a
// cluster. The rotation suite tells "restarted in the same pod" by them.
func PodStatus(ctx context.Context, inv *inventory.Inventory, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	return worldOf(inv).status(ctx, pod, serviceContainer)
}

func clusterPodStatus(ctx context.Context, client kubernetes.Interface, ns string, pod inventory.Endpoint, container string) (*inventory.PodStatus, error) {
	got, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, poll.Permanent(fmt.Errorf("pod %s/%s is gone: it was replaced by a new pod, not restarted in the same pod", ns, pod.Name))
	}
	if err != nil {
		return nil, discoverError("Pod", ns, pod.Name, "get", err)
	}
	// The sidecar is an init container that keeps running (restartPolicy
	// Always): its status is among the init containers'.
	for _, c := range append(slices.Clone(got.Status.InitContainerStatuses), got.Status.ContainerStatuses...) {
		if c.Name == container {
			return containerHistory(got, c), nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s reports no status of its container %s yet", ns, pod.Name, container)
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
		// Its latest run ended, and no new one is counted yet.
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
		st.LastExit = &inventory.Exit{Code: int(last.ExitCode), Reason: last.Reason, StartedAt: last.StartedAt.Time, FinishedAt: last.FinishedAt.Time}
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

// podWhere names where podStatus looks, for a probe.
func podWhere(s *State, pod inventory.Endpoint) string {
	return s.world().statusWhere(pod, serviceContainer)
}

// readPodSecret reads the file of a secret in a pod's /run/secrets.
func readPodSecret(ctx context.Context, s *State, pod inventory.Endpoint, file string) ([]byte, error) {
	return s.world().readSecret(ctx, pod, file)
}

// stateCluster is a client of the inventory's cluster, made once per run
// of a scenario: its steps poll, and a client per poll would open
// connections faster than they close.
func stateCluster(s *State) (*clusterView, error) {
	if s.cluster != nil {
		return s.cluster, nil
	}
	c, err := connect(s.Inv.Cluster.Kubeconfig)
	if err != nil {
		return nil, poll.Permanent(err)
	}
	s.cluster = c
	return c, nil
}

// podsOf are the pods of role that a per-pod scenario judges. A role
// with none fails the scenario, naming the role and the replicas its plan
// asks for: a loop over no pod judges nothing, and would pass. In a
// cluster, the discovery keeps a planned role whose pods are not Running
// with none; a local inventory refuses a role without pods.
func podsOf(inv *inventory.Inventory, role string) ([]inventory.Endpoint, error) {
	if r := inv.Roles[role]; r != nil && len(r.Pods) > 0 {
		return r.Pods, nil
	}
	return nil, poll.Permanent(errors.New(noRunningPod(role, plannedReplicas(inv.Facts, role))))
}

// noRunningPod says that a role has no Running pod, with the replicas its
// plan asks for where they are known (planned < 0 when not).
func noRunningPod(role string, planned int) string {
	if planned < 0 {
		return fmt.Sprintf("role %s has no Running pod", role)
	}
	return fmt.Sprintf("role %s has no Running pod (%d planned)", role, planned)
}

// plannedReplicas is how many pods the node's plan asks of a role: one
// main pod, a requested role's replicas; -1 where the node is not known or
// does not request the role.
func plannedReplicas(n *facts.Node, role string) int {
	switch {
	case role == inventory.MainRole:
		return 1
	case n == nil:
		return -1
	}
	if r, ok := n.PodRoles.Roles[role]; ok && r.Replicas != nil {
		return *r.Replicas
	}
	return -1
}

// needsMainPod says why the node's own files cannot be read through the
// inventory: its main pod has no rootDir and is no pod of a cluster. A
// main pod that is missing is no reason to skip: the scenarios that need
// its files fail, saying so (mainPod).
func needsMainPod(inv *inventory.Inventory) string {
	main := inv.Roles[inventory.MainRole]
	if main == nil || len(main.Pods) == 0 {
		return ""
	}
	return worldOf(inv).lacks(main.Pods[0], needsRoot)
}

// mainPod is the pod where the node's own files are read, or the error
// that fails a scenario that needs them.
func mainPod(inv *inventory.Inventory) (inventory.Endpoint, error) {
	if inv.Roles[inventory.MainRole] == nil {
		return inventory.Endpoint{}, poll.Permanent(fmt.Errorf("the inventory has no main pod (roles.%s) to read the node's files in", inventory.MainRole))
	}
	if pods := inv.Roles[inventory.MainRole].Pods; len(pods) > 0 {
		return pods[0], nil
	}
	// Waiting does not make a pod Running that was not at discovery.
	return inventory.Endpoint{}, poll.Permanent(fmt.Errorf("%s: the node's files are read there", noRunningPod(inventory.MainRole, 1)))
}

// nodeFile reads a file of the node's own by its path in the node, in the
// main pod, where the node's readers open it (the ldap contract's CA and
// password files, authelia's CA): locally under the main pod's rootDir, in
// a cluster with cat through exec in its container node.
func nodeFile(ctx context.Context, s *State, file string) ([]byte, error) {
	if why := needsMainPod(s.Inv); why != "" {
		return nil, poll.Permanent(errors.New(why))
	}
	pod, err := mainPod(s.Inv)
	if err != nil {
		return nil, err
	}
	return s.world().nodeFile(ctx, pod, file)
}

// nodeSecret reads a secret of the node's own in the main pod, less its
// final line end.
func nodeSecret(ctx context.Context, s *State, file string) (string, error) {
	data, err := nodeFile(ctx, s, file)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

// secretHashes hashes files of a pod's /run/secrets, to tell a new value
// from the one before.
func secretHashes(ctx context.Context, s *State, pod inventory.Endpoint, files []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range files {
		data, err := readPodSecret(ctx, s, pod, f)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		out[f] = hex.EncodeToString(sum[:8])
	}
	return out, nil
}

// secretWhere names where readPodSecret reads, for a probe.
func secretWhere(s *State, pod inventory.Endpoint, file string) string {
	return s.world().secretWhere(pod, file)
}
