package world

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/inventory"
)

// filesWorld is the local environment: each pod tells about itself
// through files the inventory names (its status file, its secrets
// folder, its root).
type filesWorld struct {
	inv *inventory.Inventory
	// cluster is where the node is deployed, where the inventory names
	// one (cluster:), for the suites that read its objects.
	cluster *Cluster
}

// Files is the world of a local inventory, whose pods the inventory names
// by their files.
func Files(inv *inventory.Inventory) World { return filesWorld{inv: inv} }

func (w filesWorld) Inventory() *inventory.Inventory { return w.inv }

func (w filesWorld) Cluster() *Cluster { return w.cluster }

// Close: a local inventory holds nothing open.
func (filesWorld) Close() {}

func (filesWorld) Dial(ctx context.Context, e inventory.Endpoint, port int) (net.Conn, error) {
	return dial(ctx, e, port)
}

func (filesWorld) Status(_ context.Context, pod inventory.Endpoint, c Container) (*inventory.PodStatus, error) {
	if c == Sidecar {
		return inventory.ReadPodStatus(pod.SidecarStatusFile)
	}
	return inventory.ReadPodStatus(pod.StatusFile)
}

func (filesWorld) StatusWhere(pod inventory.Endpoint, c Container) string {
	if c == Sidecar {
		return pod.SidecarStatusFile
	}
	return pod.StatusFile
}

func (filesWorld) ReadSecret(_ context.Context, pod inventory.Endpoint, file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(pod.SecretsDir, file))
}

func (filesWorld) SecretWhere(pod inventory.Endpoint, file string) string {
	return filepath.Join(pod.SecretsDir, file)
}

func (filesWorld) SecretTimes(_ context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, f := range files {
		info, err := os.Stat(filepath.Join(pod.SecretsDir, f))
		if err != nil {
			return nil, err
		}
		out[f] = info.ModTime()
	}
	return out, nil
}

func (filesWorld) NodeFile(_ context.Context, main inventory.Endpoint, file string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(main.RootDir, file))
	if err != nil {
		return nil, fmt.Errorf("%s in the main pod %s: %w", file, main.Name, errors.Unwrap(err))
	}
	return data, nil
}

// RestartSidecar writes a new value into the pod's sidecarRestartFile,
// which the sidecar's supervisor restarts it for.
func (filesWorld) RestartSidecar(_ context.Context, pod inventory.Endpoint) error {
	return os.WriteFile(pod.SidecarRestartFile, []byte(rand.Text()+"\n"), 0o600)
}

// IdentityNotReadable looks at the token under the pod's root: absent,
// or neither readable by others nor owned by the service's user.
func (filesWorld) IdentityNotReadable(_ context.Context, pod inventory.Endpoint) ([]string, error) {
	path := filepath.Join(pod.RootDir, ServiceAccountToken)
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return []string{fmt.Sprintf("pod %s has no service-account token", pod.Name)}, nil
	case err != nil:
		return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
	case info.Mode().Perm()&0o044 != 0:
		return nil, fmt.Errorf("pod %s: %s is readable by others (mode %s): the service could act as the pod", pod.Name, path, info.Mode().Perm())
	case ownedByService(pod, info):
		return nil, fmt.Errorf("pod %s: %s belongs to the service's own user: the service could act as the pod", pod.Name, path)
	}
	return []string{fmt.Sprintf("pod %s has a service-account token that only another user reads", pod.Name)}, nil
}

// Probe: the local environment's pods are processes on the runner's own
// loopback, so a reader there dials as the runner does.
func (filesWorld) Probe(context.Context, inventory.Endpoint, kube.ProbeSpec) (*kube.Probe, error) {
	return nil, nil
}

// Resolve: the local environment's pods are processes of the runner's
// host, whose hosts are their addresses; nothing is asked of a resolver,
// which could reach the network.
func (filesWorld) Resolve(context.Context, inventory.Endpoint, string) ([]string, error) {
	return nil, nil
}

// FinerClock: the local environment's status files and secret files
// keep nanoseconds already.
func (filesWorld) FinerClock(context.Context, inventory.Endpoint, []string) (PodClock, bool, error) {
	return PodClock{}, false, nil
}

// KubeletStop: the local environment's supervisor is its own kubelet,
// and stops nothing but for a restart or the end of the run.
func (filesWorld) KubeletStop(context.Context, inventory.Endpoint, Container, *inventory.Exit) (string, error) {
	return "", nil
}

func (filesWorld) Lacks(pod inventory.Endpoint, needs Needs) string {
	var fields []string
	switch needs {
	case NeedsRoot:
		if pod.RootDir == "" {
			fields = []string{"rootDir"}
		}
	case NeedsServiceStatus:
		if pod.StatusFile == "" {
			fields = []string{"statusFile"}
		}
	case NeedsSidecarStatus:
		if pod.SidecarStatusFile == "" {
			fields = []string{"sidecarStatusFile"}
		}
	case NeedsStatusAndSecrets, NeedsSidecar:
		if pod.StatusFile == "" || pod.SecretsDir == "" {
			fields = []string{"statusFile", "secretsDir"}
		}
		if needs == NeedsSidecar && (fields != nil || pod.SidecarStatusFile == "" || pod.SidecarRestartFile == "") {
			fields = []string{"statusFile", "secretsDir", "sidecarStatusFile", "sidecarRestartFile"}
		}
	}
	if fields == nil {
		return ""
	}
	list := strings.Join(fields, ", ")
	if i := strings.LastIndex(list, ", "); i >= 0 {
		list = list[:i] + " and " + list[i+2:]
	}
	return fmt.Sprintf("pod %s has no %s in the inventory, and is no pod of a cluster", pod.Name, list)
}

// ownedByService reports whether a file belongs to the user the pod's
// service runs as (its process, from the pod's status).
func ownedByService(pod inventory.Endpoint, info os.FileInfo) bool {
	st, err := inventory.ReadPodStatus(pod.StatusFile)
	if err != nil || st.ServicePID == 0 {
		return false
	}
	proc, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", st.ServicePID))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(proc), "\n") {
		if uids, ok := strings.CutPrefix(line, "Uid:"); ok {
			fields := strings.Fields(uids)
			sys, ok := info.Sys().(*syscall.Stat_t)
			return ok && len(fields) > 1 && fields[1] == fmt.Sprint(sys.Uid)
		}
	}
	return false
}
