package world

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
)

// Cluster is a node's world found in a cluster (Discover): a pod tells
// about itself through the API server (its status, exec in its
// containers). It holds one client for the run, which every scenario
// shares, the node's plan, whose names the suites read the cluster's
// objects by, and the port-forwards that reach the pods from outside.
type Cluster struct {
	*kube.Client
	Namespace string
	// Node and Plan are the node's facts and its plan in the namespace:
	// names (Deployments, Services, containers), replicas, ports,
	// variables and units, all from the node; never its placeholder
	// images.
	Node *facts.Node
	Plan *plan.Plan
	inv  *inventory.Inventory
	// inside: the runner runs in a pod of the cluster (no kubeconfig),
	// and dials the pods' own addresses.
	inside   bool
	forwards []*kube.Forward
}

func (c *Cluster) Inventory() *inventory.Inventory { return c.inv }

func (c *Cluster) Cluster() *Cluster { return c }

// Close stops the port-forwards and waits until their listeners are
// closed.
func (c *Cluster) Close() {
	for _, f := range c.forwards {
		f.Close()
	}
	c.forwards = nil
}

func (c *Cluster) Dial(ctx context.Context, e inventory.Endpoint, port int) (net.Conn, error) {
	return dial(ctx, e, port)
}

// RoleOf is the node's role of a planned Deployment (the main pod's is
// the zero Role with the name main).
func (c *Cluster) RoleOf(d *appsv1.Deployment) (string, facts.Role) {
	name := d.Spec.Template.Labels[names.LabelRole]
	return name, c.Node.PodRoles.Roles[name]
}

func (c *Cluster) container(pod inventory.Endpoint, ct Container) string {
	if ct == Sidecar {
		return plan.ContainerSidecar
	}
	return pod.Container
}

func (c *Cluster) Status(ctx context.Context, pod inventory.Endpoint, ct Container) (*inventory.PodStatus, error) {
	return c.podStatus(ctx, pod, c.container(pod, ct))
}

func (c *Cluster) StatusWhere(pod inventory.Endpoint, ct Container) string {
	return fmt.Sprintf("pod %s/%s (status of container %s)", c.Namespace, pod.Name, c.container(pod, ct))
}

// ReadSecret cats the file through exec in the pod's service container,
// or its sidecar's while the service waits to run again: a service that
// exited waits in the kubelet's back-off, with no container to exec in,
// and the sidecar mounts the same files.
func (c *Cluster) ReadSecret(ctx context.Context, pod inventory.Endpoint, file string) ([]byte, error) {
	return c.execBeside(ctx, pod, []string{"cat", path.Join(plan.SecretsDir, file)})
}

// execBeside runs argv in the pod's service container, or in its sidecar,
// which mounts the same secrets, while the service waits to run again.
func (c *Cluster) execBeside(ctx context.Context, pod inventory.Endpoint, argv []string) ([]byte, error) {
	out, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, argv)
	var exit *kube.ExitError
	if err != nil && (!errors.As(err, &exit) || kube.CommandMissing(err)) {
		// The service's container did not run the command (it waits to
		// run again, or has no such tool); a command that ran and failed
		// would fail alike beside it, on the same files.
		if side, sideErr := c.Exec(ctx, c.Namespace, pod.Name, plan.ContainerSidecar, argv); sideErr == nil {
			return side, nil
		}
	}
	return out, err
}

func (c *Cluster) SecretWhere(pod inventory.Endpoint, file string) string {
	return fmt.Sprintf("%s in pod %s/%s", path.Join(plan.SecretsDir, file), c.Namespace, pod.Name)
}

// SecretTimes stats the files through exec beside the service, to the
// second, as the kubelet reports a start.
func (c *Cluster) SecretTimes(ctx context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error) {
	argv := []string{"stat", "-c", "%Y %n", "--"}
	for _, f := range files {
		argv = append(argv, path.Join(plan.SecretsDir, f))
	}
	data, err := c.execBeside(ctx, pod, argv)
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

func (c *Cluster) NodeFile(ctx context.Context, main inventory.Endpoint, file string) ([]byte, error) {
	return c.Exec(ctx, c.Namespace, main.Name, plan.ContainerNode, []string{"cat", file})
}

// RestartSidecar runs `kill 1` in the container secrets: the agent, its
// PID 1, ends and the kubelet starts it again (restartPolicy Always).
// What it returns is only for a report: the exec ends with the container
// it kills.
func (c *Cluster) RestartSidecar(ctx context.Context, pod inventory.Endpoint) error {
	_, err := c.Exec(ctx, c.Namespace, pod.Name, plan.ContainerSidecar, []string{"sh", "-c", "kill 1"})
	return err
}

// IdentityNotReadable tries to read the pod's service-account token in
// each of its containers but secrets, through exec. Only cat's own word
// counts as "cannot read" (no such file, permission denied), and only in
// a container where cat is shown to run (cat /dev/null): an image without
// cat fails every exec, which proves nothing about the token.
func (c *Cluster) IdentityNotReadable(ctx context.Context, pod inventory.Endpoint) ([]string, error) {
	got, err := c.Clientset.CoreV1().Pods(c.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, ObjectError("Pod", c.Namespace, pod.Name, "get", err)
	}
	return c.tokenUnreadableInContainers(ctx, got)
}

// ErrNoProbeImage is a probe asked of a cluster without an image to run
// it from.
var ErrNoProbeImage = errors.New("a probe needs an image")

// Probe attaches to the pod's probe of spec, or adds it (kube.Client.Probe).
func (c *Cluster) Probe(ctx context.Context, pod inventory.Endpoint, spec kube.ProbeSpec) (*kube.Probe, error) {
	if spec.Image == "" {
		return nil, poll.Permanent(ErrNoProbeImage)
	}
	return c.Client.Probe(ctx, c.Namespace, pod.Name, "podroles-probe", spec)
}

// Resolve asks getent in the pod's service container (or its sidecar,
// where the service's has no shell): the pod's hostAliases, search
// domains and DNS, as the service resolves. A name that does not resolve
// is an answer, not a failure to run, so that the sidecar is not asked
// instead; images without getent give nil.
func (c *Cluster) Resolve(ctx context.Context, pod inventory.Endpoint, host string) ([]string, error) {
	const unresolved = "podroles: unresolved"
	const script = `command -v getent >/dev/null || exit 0; getent ahosts "$1" || echo "` + unresolved + `"`
	out, err := c.execBeside(ctx, pod, []string{"sh", "-c", script, "sh", host})
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

// FinerClock reads, in the service's container, the clock, the uptime,
// the start of its first process and of those it started (in clock
// ticks since boot) and the
// files' times to the nanosecond, in one exec: the start's time is the
// clock less the uptime at that moment plus the start. An image without
// a shell, GNU stat or /proc gives false.
func (c *Cluster) FinerClock(ctx context.Context, pod inventory.Endpoint, files []string) (PodClock, bool, error) {
	// The processes that the first one started are its children: a
	// command run by exec is the runtime's, not theirs.
	const script = `date +%s.%N && cat /proc/uptime && cat /proc/1/stat && { getconf CLK_TCK 2>/dev/null || echo 100; } && stat -c '%.9Y %n' -- "$@" && ` +
		`for c in $(cat /proc/1/task/*/children 2>/dev/null); do s=$(cat /proc/$c/stat 2>/dev/null) && echo "child $s"; done; true`
	argv := []string{"sh", "-c", script, "sh"}
	for _, f := range files {
		argv = append(argv, path.Join(plan.SecretsDir, f))
	}
	out, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, argv)
	var exit *kube.ExitError
	switch {
	case errors.As(err, &exit):
		return PodClock{}, false, nil // a tool of the script failed or is missing
	case err != nil:
		return PodClock{}, false, err
	}
	clock, err := parseFinerClock(string(out))
	if err != nil {
		return PodClock{}, false, nil
	}
	return clock, true, nil
}

// parseFinerClock reads finerClock's output.
func parseFinerClock(out string) (PodClock, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 {
		return PodClock{}, fmt.Errorf("%d lines", len(lines))
	}
	seconds := func(s string) (float64, error) { return strconv.ParseFloat(strings.Fields(s + " x")[0], 64) }
	now, err1 := seconds(lines[0])
	uptime, err2 := seconds(lines[1])
	tck, err3 := seconds(lines[3])
	if err := errors.Join(err1, err2, err3); err != nil || tck <= 0 {
		return PodClock{}, fmt.Errorf("no clock in %q", out)
	}
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	// A process's start is the 22nd field of its stat line, the 20th
	// after the command's name, which may hold spaces and parentheses.
	started := func(stat string) (time.Time, error) {
		_, afterName, _ := strings.Cut(stat[strings.LastIndexByte(stat, ')')+1:], " ")
		fields := strings.Fields(afterName)
		if len(fields) < 20 {
			return time.Time{}, fmt.Errorf("no start in %q", stat)
		}
		ticks, err := strconv.ParseFloat(fields[19], 64)
		if err != nil {
			return time.Time{}, err
		}
		return at(now - uptime + ticks/tck), nil
	}
	start, err := started(lines[2])
	if err != nil {
		return PodClock{}, err
	}
	clock := PodClock{Start: start, Written: map[string]time.Time{}}
	for _, line := range lines[4:] {
		if stat, ok := strings.CutPrefix(line, "child "); ok {
			under, err := started(stat)
			if err != nil {
				return PodClock{}, err
			}
			if clock.Under.IsZero() || under.Before(clock.Under) {
				clock.Under = under
			}
			continue
		}
		secs, name, ok := strings.Cut(line, " ")
		t, err := strconv.ParseFloat(secs, 64)
		if !ok || err != nil {
			return PodClock{}, fmt.Errorf("no time in %q", line)
		}
		clock.Written[path.Base(name)] = at(t)
	}
	return clock, nil
}

func (c *Cluster) Lacks(pod inventory.Endpoint, needs Needs) string {
	if pod.UID == "" {
		return fmt.Sprintf("pod %s is no pod the discovery found in the cluster", pod.Name)
	}
	if needs == NeedsSidecarStatus || needs == NeedsSidecar {
		for name, r := range c.inv.Roles {
			if slices.ContainsFunc(r.Pods, func(p inventory.Endpoint) bool { return p.Name == pod.Name }) && !hasSidecar(c.inv, name) {
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

// ServiceAccountToken is where Kubernetes mounts a pod's identity.
const ServiceAccountToken = "var/run/secrets/kubernetes.io/serviceaccount/token"

// tokenUnreadableInContainers tries to read a pod's service-account
// token in each of its containers but secrets.
func (c *Cluster) tokenUnreadableInContainers(ctx context.Context, got *corev1.Pod) ([]string, error) {
	token := "/" + ServiceAccountToken
	var notes, errs []string
	for _, container := range got.Spec.Containers {
		if container.Name == plan.ContainerSidecar {
			continue // a sidecar beside the service logs in with it
		}
		if _, err := c.Exec(ctx, c.Namespace, got.Name, container.Name, []string{"cat", "/dev/null"}); err != nil {
			errs = append(errs, fmt.Sprintf("pod %s: cannot judge whether container %s reads %s: cat does not run there (%v)", got.Name, container.Name, token, err))
			continue
		}
		out, err := c.Exec(ctx, c.Namespace, got.Name, container.Name, []string{"cat", token})
		why, judgeErr := tokenRead(token, out, err)
		if judgeErr != nil {
			errs = append(errs, fmt.Sprintf("pod %s: container %s %v", got.Name, container.Name, judgeErr))
			continue
		}
		notes = append(notes, fmt.Sprintf("pod %s: container %s cannot read %s: %s", got.Name, container.Name, token, why))
	}
	if len(errs) > 0 {
		return notes, errors.New(strings.Join(errs, "; "))
	}
	return notes, nil
}

// tokenRead judges what `cat TOKEN` came to in a container where cat
// runs: unreadable (with cat's reason) only when cat says the file is not
// there or not readable; a token it printed, or any other failure (an
// exec that broke, an error that names no such reason), is an error.
func tokenRead(token string, out []byte, err error) (string, error) {
	switch {
	case err == nil && len(out) > 0:
		return "", fmt.Errorf("reads the pod's service-account token %s: the service could act as the pod", token)
	case err == nil:
		return "", fmt.Errorf("reads %s, which is empty: cannot judge whether a token would be readable there", token)
	}
	// What cat wrote on its stderr.
	var exit *kube.ExitError
	if !errors.As(err, &exit) {
		return "", err // exec itself failed: nothing was learnt
	}
	for _, reason := range []string{"No such file or directory", "Permission denied"} {
		if strings.Contains(exit.Stderr, token) && strings.Contains(exit.Stderr, reason) {
			return strings.ToLower(reason[:1]) + reason[1:], nil
		}
	}
	return "", fmt.Errorf("cannot judge whether it reads %s: cat failed without saying the file is absent or unreadable (%v)", token, err)
}

// ProcessEnvironment reads, through exec in the pod's service container,
// the environment of the processes that run its service: the container's
// first process and that process's children (the service under a
// supervisor), by PID. This is what the service really gets, which a
// wrapper of the template's command may change.
func (c *Cluster) ProcessEnvironment(ctx context.Context, pod inventory.Endpoint) (map[int]map[string]string, error) {
	out, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, []string{"sh", "-c", "cat /proc/1/task/*/children 2>/dev/null; true"})
	if err != nil {
		return nil, err
	}
	pids := []int{1}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	envs := map[int]map[string]string{}
	for _, pid := range pids {
		raw, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, []string{"cat", fmt.Sprintf("/proc/%d/environ", pid)})
		var exit *kube.ExitError
		switch {
		case err != nil && pid != 1 && errors.As(err, &exit) && strings.Contains(exit.Stderr, "No such file or directory"):
			continue // a child that ended meanwhile
		case err != nil:
			return nil, err
		}
		envs[pid] = parseEnviron(raw)
	}
	return envs, nil
}

// parseEnviron reads /proc/PID/environ: NAME=VALUE entries, each ended by
// a NUL.
func parseEnviron(raw []byte) map[string]string {
	env := map[string]string{}
	for _, entry := range strings.Split(string(raw), "\x00") {
		if name, value, ok := strings.Cut(entry, "="); ok && name != "" {
			env[name] = value
		}
	}
	return env
}

// Process is a process of a container, as /proc tells it.
type Process struct {
	PID int
	// Comm is the name of its program (/proc/PID/comm).
	Comm string
}

// Processes lists, through exec in the pod's service container, the
// processes that container's PID namespace holds, and PID 1's command
// line: what runs there, which the image alone does not say.
func (c *Cluster) Processes(ctx context.Context, pod inventory.Endpoint) ([]Process, []string, error) {
	const script = `for p in /proc/[0-9]*; do c=$(cat "$p/comm" 2>/dev/null) && echo "${p#/proc/} $c"; done; true`
	out, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, []string{"sh", "-c", script})
	if err != nil {
		return nil, nil, err
	}
	procs := parseProcesses(string(out))
	cmdline, err := c.Exec(ctx, c.Namespace, pod.Name, pod.Container, []string{"cat", "/proc/1/cmdline"})
	if err != nil {
		return nil, nil, err
	}
	return procs, strings.FieldsFunc(string(cmdline), func(r rune) bool { return r == 0 }), nil
}

// parseProcesses reads lines of "PID COMM", in PID order.
func parseProcesses(out string) []Process {
	var procs []Process
	for _, line := range strings.Split(out, "\n") {
		pid, comm, ok := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.Atoi(pid)
		if ok && err == nil {
			procs = append(procs, Process{PID: n, Comm: comm})
		}
	}
	slices.SortFunc(procs, func(a, b Process) int { return a.PID - b.PID })
	return procs
}
