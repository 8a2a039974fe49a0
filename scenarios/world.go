package scenarios

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
)

// world is the deployment as the suites ask of its pods: a container's
// status and history, a secret file, the node's own files, a restart of
// a sidecar. A run opens one from the inventory (worldOf): the local
// environment's files, or a cluster's API server. Steps ask the world;
// none asks which world it is in.
type world interface {
	// status reads what a pod reports of one of its containers.
	status(ctx context.Context, pod inventory.Endpoint, c podContainer) (*inventory.PodStatus, error)
	// statusWhere names where status looks, for a probe.
	statusWhere(pod inventory.Endpoint, c podContainer) string
	// readSecret reads a file of the pod's /run/secrets.
	readSecret(ctx context.Context, pod inventory.Endpoint, file string) ([]byte, error)
	// secretWhere names where readSecret reads, for a probe.
	secretWhere(pod inventory.Endpoint, file string) string
	// secretTimes are the times the pod's secret files were last written.
	secretTimes(ctx context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error)
	// nodeFile reads a file of the node by its path in the node, in the
	// main pod.
	nodeFile(ctx context.Context, main inventory.Endpoint, file string) ([]byte, error)
	// restartSidecar restarts a pod's sidecar, as its crash would.
	restartSidecar(ctx context.Context, pod inventory.Endpoint) error
	// identityNotReadable says whether the pod's service cannot read the
	// pod's identity: notes when it cannot, an error when it can.
	identityNotReadable(ctx context.Context, pod inventory.Endpoint) ([]string, error)
	// lacks says why the world cannot look at a pod for what needs asks
	// ("" when it can).
	lacks(pod inventory.Endpoint, needs podNeeds) string
	// probe adds a probe from image to the pod, in its network; nil
	// where the pods share the runner's network.
	probe(ctx context.Context, pod inventory.Endpoint, image string, start time.Duration) (*kube.Probe, error)
	// resolve is what host resolves to in the pod, through its own
	// resolver (its /etc/hosts, search domains, DNS); nil where the pod
	// has no tool to ask, and the caller judges by the name.
	resolve(ctx context.Context, pod inventory.Endpoint, host string) ([]string, error)
	// finerClock reads, finer than the kubelet's second, when the pod's
	// service container started (its first process) and when its secret
	// files were written; false where the world cannot.
	finerClock(ctx context.Context, pod inventory.Endpoint, files []string) (start time.Time, written map[string]time.Time, ok bool, err error)
}

// podContainer is a container of a pod that the suites ask about.
type podContainer int

const (
	// serviceContainer runs the pod's service.
	serviceContainer podContainer = iota
	// sidecarContainer runs the OpenBao agent.
	sidecarContainer
)

// podNeeds are what a scenario looks at in a pod.
type podNeeds int

const (
	// needsStatusAndSecrets: the service's status and the secret files.
	needsStatusAndSecrets podNeeds = iota
	// needsRoot: the pod's file system.
	needsRoot
	// needsSidecar: the sidecar's status and its restart, besides the
	// service's status and the secret files.
	needsSidecar
	// needsServiceStatus: the service's status alone.
	needsServiceStatus
	// needsSidecarStatus: the sidecar's status alone.
	needsSidecarStatus
)

// worldOf is the world of an inventory: its cluster's when the inventory
// holds the cluster's pods (a discovery, which gives each pod its UID),
// else the local environment's files that the inventory names.
func worldOf(inv *inventory.Inventory) world {
	if inv.Cluster != nil {
		for _, r := range inv.Roles {
			for _, p := range r.Pods {
				if p.UID != "" {
					return &clusterWorld{inv: inv}
				}
			}
		}
	}
	return filesWorld{}
}

// world is the world of the scenario's run, opened at the first use. A
// cluster's shares the run's client with the suites that read the
// cluster's objects.
func (s *State) world() world {
	if s.w == nil {
		s.w = worldOf(s.Inv)
		if c, ok := s.w.(*clusterWorld); ok {
			c.connect = func() (*clusterView, error) { return stateCluster(s) }
		}
	}
	return s.w
}

// filesWorld is the local environment: each pod tells about itself
// through files the inventory names (its status file, its secrets
// folder, its root).
type filesWorld struct{}

func (filesWorld) status(_ context.Context, pod inventory.Endpoint, c podContainer) (*inventory.PodStatus, error) {
	if c == sidecarContainer {
		return inventory.ReadPodStatus(pod.SidecarStatusFile)
	}
	return inventory.ReadPodStatus(pod.StatusFile)
}

func (filesWorld) statusWhere(pod inventory.Endpoint, c podContainer) string {
	if c == sidecarContainer {
		return pod.SidecarStatusFile
	}
	return pod.StatusFile
}

func (filesWorld) readSecret(_ context.Context, pod inventory.Endpoint, file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(pod.SecretsDir, file))
}

func (filesWorld) secretWhere(pod inventory.Endpoint, file string) string {
	return filepath.Join(pod.SecretsDir, file)
}

func (filesWorld) secretTimes(_ context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error) {
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

func (filesWorld) nodeFile(_ context.Context, main inventory.Endpoint, file string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(main.RootDir, file))
	if err != nil {
		return nil, fmt.Errorf("%s in the main pod %s: %w", file, main.Name, errors.Unwrap(err))
	}
	return data, nil
}

// restartSidecar writes a new value into the pod's sidecarRestartFile,
// which the sidecar's supervisor restarts it for.
func (filesWorld) restartSidecar(_ context.Context, pod inventory.Endpoint) error {
	return os.WriteFile(pod.SidecarRestartFile, []byte(rand.Text()+"\n"), 0o600)
}

// identityNotReadable looks at the token under the pod's root: absent,
// or neither readable by others nor owned by the service's user.
func (filesWorld) identityNotReadable(_ context.Context, pod inventory.Endpoint) ([]string, error) {
	path := filepath.Join(pod.RootDir, serviceAccountToken)
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

// probe: the local environment's pods are processes on the runner's own
// loopback, so a reader there dials as the runner does.
func (filesWorld) probe(context.Context, inventory.Endpoint, string, time.Duration) (*kube.Probe, error) {
	return nil, nil
}

// resolve: the local environment's pods are processes of the runner's
// host, whose hosts are their addresses; nothing is asked of a resolver,
// which could reach the network.
func (filesWorld) resolve(context.Context, inventory.Endpoint, string) ([]string, error) {
	return nil, nil
}

// finerClock: the local environment's status files and secret files
// keep nanoseconds already.
func (filesWorld) finerClock(context.Context, inventory.Endpoint, []string) (time.Time, map[string]time.Time, bool, error) {
	return time.Time{}, nil, false, nil
}

func (filesWorld) lacks(pod inventory.Endpoint, needs podNeeds) string {
	var fields []string
	switch needs {
	case needsRoot:
		if pod.RootDir == "" {
			fields = []string{"rootDir"}
		}
	case needsServiceStatus:
		if pod.StatusFile == "" {
			fields = []string{"statusFile"}
		}
	case needsSidecarStatus:
		if pod.SidecarStatusFile == "" {
			fields = []string{"sidecarStatusFile"}
		}
	case needsStatusAndSecrets, needsSidecar:
		if pod.StatusFile == "" || pod.SecretsDir == "" {
			fields = []string{"statusFile", "secretsDir"}
		}
		if needs == needsSidecar && (fields != nil || pod.SidecarStatusFile == "" || pod.SidecarRestartFile == "") {
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

// clusterWorld is a cluster: a pod tells about itself through the API
// server (its status, exec in its containers). The client is made at the
// first use: steps poll, and a client per poll would open connections
// faster than they close.
type clusterWorld struct {
	inv  *inventory.Inventory
	view *clusterView
	// connect, when set, gives the client instead.
	connect func() (*clusterView, error)
}

func (w *clusterWorld) client() (*clusterView, error) {
	if w.connect != nil {
		return w.connect()
	}
	if w.view == nil {
		c, err := connect(w.inv.Cluster.Kubeconfig)
		if err != nil {
			return nil, poll.Permanent(err)
		}
		w.view = c
	}
	return w.view, nil
}

func (w *clusterWorld) exec(ctx context.Context, pod, container string, argv []string) ([]byte, error) {
	c, err := w.client()
	if err != nil {
		return nil, err
	}
	return c.Exec(ctx, w.inv.Cluster.Namespace, pod, container, argv)
}

func (w *clusterWorld) container(pod inventory.Endpoint, c podContainer) string {
	if c == sidecarContainer {
		return plan.ContainerSidecar
	}
	return pod.Container
}

func (w *clusterWorld) status(ctx context.Context, pod inventory.Endpoint, c podContainer) (*inventory.PodStatus, error) {
	cv, err := w.client()
	if err != nil {
		return nil, err
	}
	return clusterPodStatus(ctx, cv.Clientset, w.inv.Cluster.Namespace, pod, w.container(pod, c))
}

func (w *clusterWorld) statusWhere(pod inventory.Endpoint, c podContainer) string {
	return fmt.Sprintf("pod %s/%s (status of container %s)", w.inv.Cluster.Namespace, pod.Name, w.container(pod, c))
}

// readSecret cats the file through exec in the pod's service container,
// or its sidecar's while the service waits to run again: a service that
// exited waits in the kubelet's back-off, with no container to exec in,
// and the sidecar mounts the same files.
func (w *clusterWorld) readSecret(ctx context.Context, pod inventory.Endpoint, file string) ([]byte, error) {
	return w.execBeside(ctx, pod, []string{"cat", path.Join(plan.SecretsDir, file)})
}

// execBeside runs argv in the pod's service container, or in its sidecar,
// which mounts the same secrets, while the service waits to run again.
func (w *clusterWorld) execBeside(ctx context.Context, pod inventory.Endpoint, argv []string) ([]byte, error) {
	out, err := w.exec(ctx, pod.Name, pod.Container, argv)
	if err != nil {
		if side, sideErr := w.exec(ctx, pod.Name, plan.ContainerSidecar, argv); sideErr == nil {
			return side, nil
		}
	}
	return out, err
}

func (w *clusterWorld) secretWhere(pod inventory.Endpoint, file string) string {
	return fmt.Sprintf("%s in pod %s/%s", path.Join(plan.SecretsDir, file), w.inv.Cluster.Namespace, pod.Name)
}

// secretTimes stats the files through exec beside the service, to the
// second, as the kubelet reports a start.
func (w *clusterWorld) secretTimes(ctx context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error) {
	argv := []string{"stat", "-c", "%Y %n", "--"}
	for _, f := range files {
		argv = append(argv, path.Join(plan.SecretsDir, f))
	}
	data, err := w.execBeside(ctx, pod, argv)
	if err != nil {
		return nil, err
	}
	out := map[string]time.Time{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		secs, name, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(secs, 10, 64)
		if !ok || err != nil {
			return nil, poll.Permanent(fmt.Errorf("stat in pod %s printed %q, not the time and name of a file", pod.Name, line))
		}
		// A start is known to the second: a file of the same second
		// counts as before it.
		out[path.Base(name)] = time.Unix(n, 0)
	}
	for _, f := range files {
		if _, ok := out[f]; !ok {
			return nil, fmt.Errorf("stat in pod %s printed no time of %s", pod.Name, f)
		}
	}
	return out, nil
}

func (w *clusterWorld) nodeFile(ctx context.Context, main inventory.Endpoint, file string) ([]byte, error) {
	return w.exec(ctx, main.Name, plan.ContainerNode, []string{"cat", file})
}

// restartSidecar runs `kill 1` in the container secrets: the agent, its
// PID 1, ends and the kubelet starts it again (restartPolicy Always).
// What it returns is only for a report: the exec ends with the container
// it kills.
func (w *clusterWorld) restartSidecar(ctx context.Context, pod inventory.Endpoint) error {
	_, err := w.exec(ctx, pod.Name, plan.ContainerSidecar, []string{"sh", "-c", "kill 1"})
	return err
}

// identityNotReadable tries to read the pod's service-account token in
// each of its containers but secrets, through exec. Only cat's own word
// counts as "cannot read" (no such file, permission denied), and only in
// a container where cat is shown to run (cat /dev/null): an image without
// cat fails every exec, which proves nothing about the token.
func (w *clusterWorld) identityNotReadable(ctx context.Context, pod inventory.Endpoint) ([]string, error) {
	c, err := w.client()
	if err != nil {
		return nil, err
	}
	ns := w.inv.Cluster.Namespace
	got, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, discoverError("Pod", ns, pod.Name, "get", err)
	}
	return tokenUnreadableInContainers(ctx, c, ns, got)
}

func (w *clusterWorld) probe(ctx context.Context, pod inventory.Endpoint, image string, start time.Duration) (*kube.Probe, error) {
	c, err := w.client()
	if err != nil {
		return nil, err
	}
	return addProbe(ctx, c.Client, w.inv.Cluster.Namespace, pod, image, kube.ProbeSpec{Start: start})
}

// resolve asks getent in the pod's service container (or its sidecar,
// where the service's has no shell): the pod's hostAliases, search
// domains and DNS, as the service resolves. A name that does not resolve
// is an answer, not a failure to run, so that the sidecar is not asked
// instead; images without getent give nil.
func (w *clusterWorld) resolve(ctx context.Context, pod inventory.Endpoint, host string) ([]string, error) {
	const unresolved = "podroles: unresolved"
	const script = `command -v getent >/dev/null || exit 0; getent ahosts "$1" || echo "` + unresolved + `"`
	out, err := w.execBeside(ctx, pod, []string{"sh", "-c", script, "sh", host})
	switch {
	case kube.CommandMissing(err):
		return nil, nil
	case err != nil:
		return nil, err
	case strings.Contains(string(out), unresolved):
		return nil, poll.Saw("pod %s cannot resolve %s", pod.Name, host)
	}
	var addrs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !slices.Contains(addrs, f[0]) {
			addrs = append(addrs, f[0])
		}
	}
	return addrs, nil
}

// finerClock reads, in the service's container, the clock, the uptime,
// the start of its first process (in clock ticks since boot) and the
// files' times to the nanosecond, in one exec: the start's time is the
// clock less the uptime at that moment plus the start. An image without
// a shell, GNU stat or /proc gives false.
func (w *clusterWorld) finerClock(ctx context.Context, pod inventory.Endpoint, files []string) (time.Time, map[string]time.Time, bool, error) {
	const script = `date +%s.%N && cat /proc/uptime && cat /proc/1/stat && { getconf CLK_TCK 2>/dev/null || echo 100; } && stat -c '%.9Y %n' -- "$@"`
	argv := []string{"sh", "-c", script, "sh"}
	for _, f := range files {
		argv = append(argv, path.Join(plan.SecretsDir, f))
	}
	out, err := w.exec(ctx, pod.Name, pod.Container, argv)
	var exit *kube.ExitError
	switch {
	case errors.As(err, &exit):
		return time.Time{}, nil, false, nil // a tool of the script failed or is missing
	case err != nil:
		return time.Time{}, nil, false, err
	}
	start, written, err := parseFinerClock(string(out))
	if err != nil {
		return time.Time{}, nil, false, nil
	}
	return start, written, true, nil
}

// parseFinerClock reads finerClock's output.
func parseFinerClock(out string) (time.Time, map[string]time.Time, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 {
		return time.Time{}, nil, fmt.Errorf("%d lines", len(lines))
	}
	seconds := func(s string) (float64, error) { return strconv.ParseFloat(strings.Fields(s + " x")[0], 64) }
	now, err1 := seconds(lines[0])
	uptime, err2 := seconds(lines[1])
	// The fields after the command's name, which may hold spaces: the
	// start is the 22nd field of the line, the 20th after the name.
	_, afterName, _ := strings.Cut(lines[2][strings.LastIndexByte(lines[2], ')')+1:], " ")
	fields := strings.Fields(afterName)
	tck, err3 := seconds(lines[3])
	if err := errors.Join(err1, err2, err3); err != nil || len(fields) < 20 || tck <= 0 {
		return time.Time{}, nil, fmt.Errorf("no clock in %q", out)
	}
	ticks, err := strconv.ParseFloat(fields[19], 64)
	if err != nil {
		return time.Time{}, nil, err
	}
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	start := at(now - uptime + ticks/tck)
	written := map[string]time.Time{}
	for _, line := range lines[4:] {
		secs, name, ok := strings.Cut(line, " ")
		t, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil {
			return time.Time{}, nil, fmt.Errorf("no time in %q", line)
		}
		written[path.Base(name)] = at(t)
	}
	return start, written, nil
}

func (w *clusterWorld) lacks(pod inventory.Endpoint, needs podNeeds) string {
	if pod.UID == "" {
		return fmt.Sprintf("pod %s is no pod the discovery found in the cluster", pod.Name)
	}
	if needs == needsSidecarStatus || needs == needsSidecar {
		for name, r := range w.inv.Roles {
			if slices.ContainsFunc(r.Pods, func(p inventory.Endpoint) bool { return p.Name == pod.Name }) && !hasSidecar(w.inv, name) {
				return fmt.Sprintf("pod %s of role %s has no sidecar: the plan gives one to a role of a service's image with secrets", pod.Name, name)
			}
		}
	}
	return ""
}

// hasSidecar says the pods of a role have the sidecar secrets: a role of a
// service's image, with secrets.
func hasSidecar(inv *inventory.Inventory, role string) bool {
	if inv.Facts == nil {
		return false
	}
	r, ok := inv.Facts.PodRoles.Roles[role]
	return ok && r.Service != nil && len(r.Secrets) > 0
}
