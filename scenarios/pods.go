package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// A pod of the local environment tells about itself through files (its
// status file, its secrets folder); a pod of a cluster through the API
// server (its status, exec). These helpers let the suites ask either.

// inCluster says the pod is one of a cluster's, found by Discover.
func inCluster(inv *inventory.Inventory, pod inventory.Endpoint) bool {
	return inv.Cluster != nil && pod.UID != ""
}

func podStatus(ctx context.Context, s *State, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	if !inCluster(s.Inv, pod) {
		return inventory.ReadPodStatus(pod.StatusFile)
	}
	c, err := stateCluster(s)
	if err != nil {
		return nil, err
	}
	return clusterPodStatus(ctx, c.Clientset, s.Inv.Cluster.Namespace, pod, pod.Container)
}

// PodStatus reads what a pod reports of its service: its UID, which stays
// while the pod lives, and the restart count of its service's container;
// from the local environment's status file, or from the pod's status in a
// cluster. The rotation suite tells "restarted in the same pod" by them.
func PodStatus(ctx context.Context, inv *inventory.Inventory, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	if !inCluster(inv, pod) {
		return inventory.ReadPodStatus(pod.StatusFile)
	}
	c, err := connect(inv.Cluster.Kubeconfig)
	if err != nil {
		return nil, poll.Permanent(err)
	}
	return clusterPodStatus(ctx, c.Clientset, inv.Cluster.Namespace, pod, pod.Container)
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
			st := &inventory.PodStatus{Pod: got.Name, UID: string(got.UID), RestartCount: int(c.RestartCount)}
			if c.State.Running != nil && (c.Started == nil || *c.Started) {
				st.StartedAt = c.State.Running.StartedAt.Time
			}
			return st, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s reports no status of its container %s yet", ns, pod.Name, container)
}

// podWhere names where podStatus looks, for a probe.
func podWhere(s *State, pod inventory.Endpoint) string {
	if inCluster(s.Inv, pod) {
		return fmt.Sprintf("pod %s/%s (status of container %s)", s.Inv.Cluster.Namespace, pod.Name, pod.Container)
	}
	return pod.StatusFile
}

// readPodSecret reads the file of a secret in a pod's /run/secrets: from
// the local environment's folder of it, or with cat through exec in the
// pod's service container, which mounts it.
func readPodSecret(ctx context.Context, s *State, pod inventory.Endpoint, file string) ([]byte, error) {
	if !inCluster(s.Inv, pod) {
		return os.ReadFile(filepath.Join(pod.SecretsDir, file))
	}
	c, err := stateCluster(s)
	if err != nil {
		return nil, err
	}
	return c.Exec(ctx, s.Inv.Cluster.Namespace, pod.Name, pod.Container, []string{"cat", path.Join("/run/secrets", file)})
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
	if main != nil && len(main.Pods) > 0 && main.Pods[0].RootDir == "" && !inCluster(inv, main.Pods[0]) {
		return fmt.Sprintf("the main pod %s has no rootDir in the inventory, and is no pod of a cluster", main.Pods[0].Name)
	}
	return ""
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
	if !inCluster(s.Inv, pod) {
		data, err := os.ReadFile(filepath.Join(pod.RootDir, file))
		if err != nil {
			return nil, fmt.Errorf("%s in the main pod %s: %w", file, pod.Name, errors.Unwrap(err))
		}
		return data, nil
	}
	c, err := stateCluster(s)
	if err != nil {
		return nil, err
	}
	return c.Exec(ctx, s.Inv.Cluster.Namespace, pod.Name, plan.ContainerNode, []string{"cat", file})
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

// secretWhere names where readPodSecret reads, for a probe.
func secretWhere(s *State, pod inventory.Endpoint, file string) string {
	if inCluster(s.Inv, pod) {
		return fmt.Sprintf("/run/secrets/%s in pod %s/%s", file, s.Inv.Cluster.Namespace, pod.Name)
	}
	return filepath.Join(pod.SecretsDir, file)
}
