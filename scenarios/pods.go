package scenarios

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/internal/poll"
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
	return clusterPodStatus(ctx, c.Clientset, s.Inv.Cluster.Namespace, pod)
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
	return clusterPodStatus(ctx, c.Clientset, inv.Cluster.Namespace, pod)
}

func clusterPodStatus(ctx context.Context, client kubernetes.Interface, ns string, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	got, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, poll.Permanent(fmt.Errorf("pod %s/%s is gone: it was replaced by a new pod, not restarted in the same pod", ns, pod.Name))
	}
	if err != nil {
		return nil, discoverError("Pod", ns, pod.Name, "get", err)
	}
	st := &inventory.PodStatus{Pod: got.Name, UID: string(got.UID)}
	for _, c := range got.Status.ContainerStatuses {
		if c.Name == pod.Container {
			st.RestartCount = int(c.RestartCount)
			if c.State.Running != nil {
				st.StartedAt = c.State.Running.StartedAt.Time
			}
			return st, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s reports no status of its container %s yet", ns, pod.Name, pod.Container)
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
	if c, ok := s.Values[clusterKey].(*clusterView); ok {
		return c, nil
	}
	c, err := connect(s.Inv.Cluster.Kubeconfig)
	if err != nil {
		return nil, poll.Permanent(err)
	}
	s.Values[clusterKey] = c
	return c, nil
}

// clusterKey holds stateCluster's client in State.Values.
const clusterKey = "podroles: cluster client"

// secretWhere names where readPodSecret reads, for a probe.
func secretWhere(s *State, pod inventory.Endpoint, file string) string {
	if inCluster(s.Inv, pod) {
		return fmt.Sprintf("/run/secrets/%s in pod %s/%s", file, s.Inv.Cluster.Namespace, pod.Name)
	}
	return filepath.Join(pod.SecretsDir, file)
}
