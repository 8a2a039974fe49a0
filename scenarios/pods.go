package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// A pod of the local environment tells about itself through files (its
// status file, its secrets folder); a pod of a cluster through the API
// server (its status, exec). These helpers let the suites ask either.

func podStatus(ctx context.Context, s *State, pod inventory.Endpoint) (*inventory.PodStatus, error) {
	return s.World.Status(ctx, pod, world.Service)
}

// podWhere names where podStatus looks, for a probe.
func podWhere(s *State, pod inventory.Endpoint) string {
	return s.World.StatusWhere(pod, world.Service)
}

// readPodSecret reads the file of a secret in a pod's /run/secrets.
func readPodSecret(ctx context.Context, s *State, pod inventory.Endpoint, file string) ([]byte, error) {
	return s.World.ReadSecret(ctx, pod, file)
}

// clusterOf is the cluster of the scenario's world, for a step that reads
// its objects; a scenario that has one declares it (needsCluster), so
// that a world with none fails only a step that forgot to.
func clusterOf(s *State) (*world.Cluster, error) {
	if c := s.World.Cluster(); c != nil {
		return c, nil
	}
	return nil, poll.Permanent(errors.New(noCluster))
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
func needsMainPod(w world.World) string {
	inv := w.Inventory()
	main := inv.Roles[inventory.MainRole]
	if main == nil || len(main.Pods) == 0 {
		return ""
	}
	return w.Lacks(main.Pods[0], world.NeedsRoot)
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
	if why := needsMainPod(s.World); why != "" {
		return nil, poll.Permanent(errors.New(why))
	}
	pod, err := mainPod(s.Inv)
	if err != nil {
		return nil, err
	}
	return s.World.NodeFile(ctx, pod, file)
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
	return s.World.SecretWhere(pod, file)
}
