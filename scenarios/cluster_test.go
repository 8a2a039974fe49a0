package scenarios_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// The cluster tests run against the directory example deployed as real
// pods on the machine's real node (one per machine: the package's tests
// share it, and break and mend it one after the other), and against a
// control plane with a KWOK node where pods need not run. TestMain stops
// both by their processes' PIDs; the node's stop fails unless it left the
// machine as it found it.
var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	dir  string
	err  error
}

var real struct {
	once sync.Once
	env  *localenv.Env
	node *facts.Node
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	liftParallel()
	testenv.Main(m, func() error {
		if real.env == nil {
			// An Up that failed stopped what it started.
			if real.dir != "" {
				return os.RemoveAll(real.dir)
			}
			return nil
		}
		if err := real.env.Down(); err != nil {
			// Left for a look: what is mounted there would be lost.
			return fmt.Errorf("the real cluster's environment down: %w (%s is left)", err, real.dir)
		}
		return os.RemoveAll(real.dir)
	}, func() error {
		if shared.cp == nil {
			return nil
		}
		err := shared.cp.Down()
		os.RemoveAll(shared.dir)
		return err
	})
}

// liftParallel lifts go test's bound on parallel tests (the cores), unless
// -parallel was given: TestRealNode must not wait behind the local tests
// for a slot. Those take one of localSlots instead.
func liftParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "1000")
	}
}

// localSlots bounds the local environments that the package's parallel
// tests run at once: one per core, but the core the real node's start
// and pods need, where it runs. Its path is the package's longest.
var localSlots = make(chan struct{}, localSlotCount())

func localSlotCount() int {
	n := runtime.GOMAXPROCS(0)
	if realNodeMissing() == "" {
		n--
	}
	return max(1, n)
}

// realNodeMissing says what this run lacks to start the real node, or "".
func realNodeMissing() string {
	switch {
	case os.Getenv(servers.DirEnv) == "" || os.Getenv(localenv.EnvImageServers) == "":
		return "make test builds the kubelet, the control plane and the images of the real node"
	case os.Geteuid() != 0:
		return "the real node runs as root only"
	}
	return ""
}

// localSlot waits for a local slot and frees it when the test ends.
func localSlot(t *testing.T) {
	localSlots <- struct{}{}
	t.Cleanup(func() { <-localSlots })
}

// TestRealNode runs the tests of the real pods one after the other: they
// share the machine's one node and the directory example's namespace. It
// is one parallel test, so that the package's local tests run beside it
// while it waits on pods and back-offs.
func TestRealNode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		test func(*testing.T)
	}{
		{"UnitsSuiteOnNodeImagePods", testUnitsSuiteOnNodeImagePods},
		{"StreamingOverWebSocketAndSPDY", testStreamingOverWebSocketAndSPDY},
		// Each case ends on new pods: the kill of the next one is
		// restarted after the kubelet's shortest back-off.
		{"BreakingCases", testBreakingCasesOnRealPods},
		{"ExecAndRestartCounts", testRealPodsExecAndRestartCounts},
		{"PublisherWaitsForTheDirectory", testPublisherWaitsForTheDirectory},
		{"ManifestJob", testManifestJobOnRealPods},
		{"ManifestRole", testManifestRoleOnRealPods},
		{"PassEverySuite", testRealPodsPassEverySuite},
	} {
		t.Run(c.name, c.test)
	}
}

// ephemeralContainers are the names of the ephemeral containers of each
// pod of namespace that has any.
func ephemeralContainers(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace string) map[string][]string {
	t.Helper()
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range pods.Items {
		for _, c := range p.Spec.EphemeralContainers {
			out[p.Name] = append(out[p.Name], c.Name)
		}
	}
	return out
}

// controlPlane returns the package's control plane with its KWOK node,
// started at the first call; without make servers the test is skipped.
func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "podroles-cp-"); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cp, shared.err = controlplane.Start(ctx, controlplane.Options{Dir: shared.dir, Loopback: localenv.RandomLoopback(), Nodes: true})
		if shared.err != nil {
			// A run without the servers skips: it leaves no folder.
			os.RemoveAll(shared.dir)
		}
	})
	if shared.err != nil {
		if os.Getenv(servers.DirEnv) == "" {
			t.Skipf("%v (make test builds them)", shared.err)
		}
		t.Fatal(shared.err)
	}
	return shared.cp
}

// applyPlan applies node's plan to namespace ns of the control plane,
// and waits until each Deployment has its replicas Running with an
// address.
func applyPlan(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, node *facts.Node, ns string) (*plan.Plan, kubernetes.Interface) {
	t.Helper()
	p, err := plan.Make(node, plan.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Deployments {
		probe := poll.Probe{Endpoint: "Deployment " + ns + "/" + d.Name, Expect: "Running pods", Within: time.Minute}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
			if err != nil {
				return err
			}
			running := 0
			for _, pod := range pods.Items {
				if pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" {
					running++
				}
			}
			if running != int(*d.Spec.Replicas) {
				return poll.Saw("%d Running", running)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return p, client
}

// exampleNode evaluates an example node.
func exampleNode(t *testing.T, ctx context.Context, example string) *facts.Node {
	t.Helper()
	s, err := nixeval.FileSource("../examples/" + example)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := (&nixeval.Evaluator{Nix: nixtest.Nix(t)}).Extract(ctx, []nixeval.Source{s})
	if err != nil {
		t.Fatal(err)
	}
	return nodes[0]
}

// realCluster returns the package's local environment whose cluster runs
// the directory example as real pods, started at the first call. Where
// make test did not build the servers and images, or not as root, the
// test is skipped.
func realCluster(t *testing.T) *localenv.Env {
	t.Helper()
	if why := realNodeMissing(); why != "" {
		t.Skip(why)
	}
	real.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
		defer cancel()
		// The directory example, with the test deployment's KV-only role.
		real.node = localenv.WithWorkerRole(exampleNode(t, ctx, "directory.nix"))
		if real.dir, real.err = os.MkdirTemp("", "podroles-env-"); real.err != nil {
			return
		}
		os.Chmod(real.dir, 0o711) // PostgreSQL's user passes through
		// The node is the machine's: another package's tests may hold it.
		real.env, real.err = localenv.Up(ctx, localenv.Options{Dir: real.dir, Loopback: localenv.RandomLoopback(), Node: "directory", Cluster: real.node, NodeWait: 45 * time.Minute})
	})
	if real.err != nil {
		t.Fatal(real.err)
	}
	return real.env
}

// clusterOptions are o for a run against the real node's pods: the
// reader in the main pod is the runner's image, which make images built
// and the node imported.
func clusterOptions(t *testing.T, o scenarios.Options) scenarios.Options {
	t.Helper()
	if o.ProbeImage = builtRunnerImage(t); o.ProbeImage == "" {
		t.Fatal("no runner image: make images builds it, the probe of the main pod")
	}
	return o
}

// builtRunnerImage is the runner's image that make images built, or ""
// where none was.
func builtRunnerImage(t *testing.T) string {
	t.Helper()
	images, err := localenv.ImagesFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return images.Runner
}

// discoverReal finds the directory example's world in the real cluster
// as scenarios run --kubeconfig does, through port-forwards that stop
// when the test ends.
func discoverReal(t *testing.T, ctx context.Context, env *localenv.Env, kubeconfig string) world.World {
	t.Helper()
	base, err := inventory.LoadBase(env.RealPods().Inventory)
	if err != nil {
		t.Fatal(err)
	}
	found, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: env.Namespace, Node: real.node, Dir: t.TempDir(), Base: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(found.Close)
	return found
}

func runSuites(ctx context.Context, t *testing.T, w world.World, patience time.Duration, names ...string) map[string]*scenarios.Result {
	t.Helper()
	suites, err := scenarios.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*scenarios.Result{}
	for _, r := range scenarios.Run(ctx, w, suites, clusterOptions(t, scenarios.Options{Parallel: scenarios.DefaultParallel, Timeout: scenarios.DefaultTimeout, Patience: patience, Disruptive: true})) {
		out[r.ID()] = r
	}
	return out
}

// requirePassed fails for each result that did not pass, but those
// skipped for a reason in skipped.
func requirePassed(t *testing.T, results map[string]*scenarios.Result, skipped ...string) {
	t.Helper()
	for id, r := range results {
		if r.Status == scenarios.Skipped && slices.ContainsFunc(skipped, func(why string) bool { return strings.Contains(r.Reason, why) }) {
			continue
		}
		if r.Status != scenarios.Passed {
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
}

// podsOf lists the Running pods of a Deployment of the real cluster, in
// name order.
func podsOf(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, deployment string) []corev1.Pod {
	t.Helper()
	d, err := client.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		t.Fatal(err)
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil })
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// waitAvailable waits until a Deployment's replicas are all updated and
// ready, and its old pods gone.
func waitAvailable(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, name string, within ...time.Duration) {
	t.Helper()
	limit := 3 * time.Minute
	if len(within) > 0 {
		limit = within[0]
	}
	waitDeployment(t, ctx, client, namespace, name, "all replicas updated and ready", limit, func(d *appsv1.Deployment) error {
		want := *d.Spec.Replicas
		if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
			return poll.Saw("%d updated, %d ready, %d in all, of %d; %s", d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.Replicas, want, localenv.PodTrouble(ctx, client, d))
		}
		if pods := podsOf(t, ctx, client, namespace, name); len(pods) != int(want) {
			return poll.Saw("%d Running pods", len(pods))
		}
		return nil
	})
}

// waitDeployment waits, within at most, until a Deployment is as ready
// says (nil), and fails the test otherwise.
func waitDeployment(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, name, expect string, within time.Duration, ready func(*appsv1.Deployment) error) {
	t.Helper()
	probe := poll.Probe{Endpoint: "Deployment " + namespace + "/" + name, Expect: expect, Within: within}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return ready(d)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// freshPods deletes the pods of namespace whose containers restarted,
// and waits until each Deployment of namespace is available. A kubelet
// keeps a container's back-off for 10 minutes after its last restart: a
// break, or a disruptive run, leaves pods whose next restart waits up to
// 5 minutes (Authelia crash-loops while lldap's Service selects no lldap
// pod). The next case starts on new pods instead of waiting that out. A
// deployment that cannot come up still fails here.
func freshPods(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace string) {
	t.Helper()
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, c := range slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses) {
			if c.RestartCount > 0 {
				t.Logf("pod %s: container %s restarted %d times: a new pod, without its back-off", p.Name, c.Name, c.RestartCount)
				if err := client.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	settled(t, ctx, client, namespace)
}

// settled waits until each Deployment of namespace is available, as a
// user's cluster recovers from a break: its pods keep their restarts and
// the back-off they grew. A pod between two restarts shows no back-off
// yet: it is waited for as long as the kubelet's longest back-off.
func settled(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace string) {
	t.Helper()
	deployments, err := client.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deployments.Items {
		waitAvailable(t, ctx, client, namespace, d.Name, 6*time.Minute)
	}
}

// update changes a Deployment of the real cluster and waits until it is
// rolled out.
func update(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	updateDeployment(t, ctx, client, namespace, name, change)
	waitAvailable(t, ctx, client, namespace, name)
}

// updateDeployment changes a Deployment. The controller writes its
// status meanwhile, as any operator's kubectl meets: on a conflict it is
// read and changed again.
func updateDeployment(t *testing.T, ctx context.Context, client kubernetes.Interface, namespace, name string, change func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(d)
		_, err = client.AppsV1().Deployments(namespace).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func clusterClient(t *testing.T, env *localenv.Env) (kubernetes.Interface, *kube.Client) {
	t.Helper()
	c, err := kube.Connect(env.RealPods().Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	return c.Clientset, c
}

// hostPID is the host PID of a container of a pod: the process the
// container runs (its entrypoint), or with child, that process's only
// child (the service under the pod supervisor).
func hostPID(t *testing.T, ctx context.Context, env *localenv.Env, pod corev1.Pod, container string, child bool) int {
	t.Helper()
	var id string
	for _, s := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
		if s.Name == container {
			id = strings.TrimPrefix(s.ContainerID, "containerd://")
		}
	}
	pid, err := env.RealPods().Node().Containerd().TaskPID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !child {
		return pid
	}
	// A Go program's child is its thread's: look at every thread.
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var children []string
	for _, task := range tasks {
		data, _ := os.ReadFile(task)
		children = append(children, strings.Fields(string(data))...)
	}
	if len(children) != 1 {
		t.Fatalf("container %s of pod %s: the service of pid %d: children %v", container, pod.Name, pid, children)
	}
	service, _ := strconv.Atoi(children[0])
	return service
}

// testRealPodsPassEverySuite runs every suite against the directory
// example's real pods: all pass, but lldap's HTTP API, which slapd does
// not serve. A plain run first changes nothing. Then, the node's kubelet
// backing off as shipped, the suites run twice in a row with
// --disruptive, the second time with the back-off grown by the first
// run's restarts: first in the cluster's way (pods and Services dialled
// directly, as the Job does) as the ServiceAccount of scenarios manifest
// with a token of its own, the API server's RBAC judging each call on
// the Role of that selection; then from outside, as the admin, reaching
// the pods through the API server alone (exec, port-forward, status).
func testRealPodsPassEverySuite(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	// The cases before may have left pods in a back-off of minutes: the
	// first run judges new pods, the second the back-off the first grew.
	client, _ := clusterClient(t, env)
	freshPods(t, ctx, client, env.Namespace)
	found := discoverReal(t, ctx, env, env.RealPods().Kubeconfig())
	for name, r := range found.Inventory().Roles {
		for _, e := range append(slices.Clone(r.Pods), derefEndpoints(r.Service)...) {
			if e.StatusFile != "" || e.SecretsDir != "" || e.RootDir != "" {
				t.Errorf("role %s: %s is read through the local environment's files: %+v", name, e.Name, e)
			}
			for port, addr := range e.Forwarded {
				if ap, err := netip.ParseAddrPort(addr); err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") {
					t.Errorf("role %s: %s port %d is reached at %s, not through a port-forward on loopback", name, e.Name, port, addr)
				}
			}
		}
	}
	// A plain run changes nothing: no KV write, no revocation.
	before, err := env.Servers().OpenBaoChanges()
	if err != nil {
		t.Fatal(err)
	}
	suites, err := scenarios.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	// At the command's defaults, as a user's run.
	for _, r := range scenarios.Run(ctx, found, suites, clusterOptions(t, scenarios.Options{Parallel: scenarios.DefaultParallel, Timeout: scenarios.DefaultTimeout, Patience: scenarios.DefaultPatience})) {
		if r.Disruptive && r.Status != scenarios.Skipped {
			t.Errorf("%s ran without --disruptive: %s", r.ID(), r.Status)
		}
	}
	if after, err := env.Servers().OpenBaoChanges(); err != nil || len(after) != len(before) {
		t.Errorf("a run without --disruptive changed secrets in OpenBao: %v %q", err, after[min(len(before), len(after)):])
	}
	// A plain run after the first adds nothing to any pod's spec: the
	// probe that the first added to the main pod serves the next.
	added := ephemeralContainers(t, ctx, client, env.Namespace)
	ldap, err := scenarios.Select([]string{"ldap"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range scenarios.Run(ctx, found, ldap, clusterOptions(t, scenarios.Options{Timeout: scenarios.DefaultTimeout, Patience: scenarios.DefaultPatience})) {
		if r.Status == scenarios.Failed {
			t.Errorf("run again, %s failed: %s", r.ID(), r.Reason)
		}
	}
	if again := ephemeralContainers(t, ctx, client, env.Namespace); !reflect.DeepEqual(added, again) {
		t.Errorf("a second plain run changed the pods' ephemeral containers: %v, then %v", added, again)
	} else {
		t.Logf("the pods' ephemeral containers after two runs: %v", again)
	}
	r := newRunnerAccount(t, env, client)
	t.Run("run 1, in the cluster as the manifest's ServiceAccount", func(t *testing.T) {
		r.t = t
		m := r.apply(ctx, scenarios.ManifestOptions{Disruptive: true})
		inside, err := r.discover(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		defer inside.Close()
		start := time.Now()
		results := runSuites(ctx, t, inside, scenarios.DefaultPatience)
		t.Logf("run 1: %s", time.Since(start).Round(time.Second))
		notForbidden(t, results, m)
		judgeEverySuite(t, ctx, env, client, results, false)
	})
	t.Run("run 2, from outside as the admin", func(t *testing.T) {
		start := time.Now()
		results := runSuites(ctx, t, found, scenarios.DefaultPatience)
		t.Logf("run 2: %s", time.Since(start).Round(time.Second))
		judgeEverySuite(t, ctx, env, client, results, true)
	})
}

// judgeEverySuite checks a run of testRealPodsPassEverySuite.
//
// afterRestarts: run 1's rotations restarted the services. The kubelet
// then keeps no first run's start, and service-started-after-secrets is
// rightly inconclusive, saying so.
func judgeEverySuite(t *testing.T, ctx context.Context, env *localenv.Env, client kubernetes.Interface, results map[string]*scenarios.Result, afterRestarts bool) {
	// Where the run's time went: mostly the kubelet's back-off.
	var slowest []*scenarios.Result
	for _, r := range results {
		slowest = append(slowest, r)
	}
	slices.SortFunc(slowest, func(a, b *scenarios.Result) int { return cmp.Compare(b.Duration, a.Duration) })
	for _, r := range slowest[:min(5, len(slowest))] {
		t.Logf("%s took %s", r.ID(), r.Duration.Round(time.Second))
	}
	const firstRunUnknown = "secrets/service-started-after-secrets"
	if r := results[firstRunUnknown]; afterRestarts && r != nil && r.Status == scenarios.Inconclusive {
		if !strings.Contains(r.Reason, "the kubelet keeps only the last ended run") && !strings.Contains(r.Reason, "were written again after its service's first run started") {
			t.Errorf("%s: inconclusive for another reason: %s", firstRunUnknown, r.Reason)
		}
		t.Logf("%s after run 1's restarts: %s", firstRunUnknown, r.Reason)
		delete(results, firstRunUnknown)
	}
	requirePassed(t, results, "run slapd standing in for lldap")
	notes := func(id string) string {
		var all []string
		for _, s := range results[id].Steps {
			all = append(all, s.Notes...)
		}
		return strings.Join(all, "\n")
	}
	t.Logf("units × pods:\n%s", notes("units/units-where-their-lists-permit"))
	if n := notes("rotation/new-credential-restarts-lldap-replicas"); strings.Count(n, "restarted its service in the same pod") != 2 {
		t.Errorf("rotation: not each replica restarted in the same pod:\n%s", n)
	}
	for id, want := range map[string]string{
		"secrets/identity-not-readable":         "container authelia cannot read /var/run/secrets/kubernetes.io/serviceaccount/token",
		"secrets/service-started-after-secrets": "after its 5 secret files",
		"rotation/sidecar-restart-restarts-pki": "a new tls.pem from the restarted sidecar, and its service restarted in the same pod",
		"ldap/service-ldaps-bind":               "from the main pod directory-",
		"authelia/portal-login":                 "that /etc/ssl/openbao-internal-ca.pem verifies",
		"deployments/deployments-as-planned":    "Deployment directory-lldap (role lldap): 2 ready replicas of lldap,companion",
		// The main pod's own agent rendered the reader's file from the
		// entry the role's sidecar reads.
		"ldap/reader-password-from-kv": "the main pod's /var/lib/lldap-reader/bind-password holds field env of secret/data/lldap/authelia-bind, variable LLDAP_LDAP_USER_PASS with no line end, as bind-password does in the 2 pods of role lldap",
	} {
		if _, ran := results[id]; !ran {
			continue
		}
		if n := notes(id); !strings.Contains(n, want) {
			t.Errorf("%s did not say %q:\n%s", id, want, n)
		}
	}
	// The reader in the main pod dialled the Service by the contract's
	// host, through the cluster's DNS.
	if n := notes("ldap/service-ldaps-bind"); !strings.Contains(n, "to directory-lldap.directory.svc.cluster.local:6360: bound as uid=authelia-bind") {
		t.Errorf("ldap/service-ldaps-bind did not bind at the Service by its name from the main pod:\n%s", n)
	}
	// The restarts are the kubelet's: each lldap pod's service container
	// ended (the supervisor's exit) and ran again in the same pod.
	for _, pod := range podsOf(t, ctx, client, env.Namespace, "directory-lldap") {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "lldap" && (s.RestartCount == 0 || s.LastTerminationState.Terminated == nil) {
				t.Errorf("pod %s: the kubelet counted no restart of lldap after the rotation: %+v", pod.Name, s)
			}
		}
	}
}

func derefEndpoints(e *inventory.Endpoint) []inventory.Endpoint {
	if e == nil {
		return nil
	}
	return []inventory.Endpoint{*e}
}

// testPublisherWaitsForTheDirectory is US2-11 on the stand-in of
// lldap-publish-roles in the real node's main pod: started while the
// lldap role has no pod, the unit never fails and the main pod stays
// ready; once the role answers, the members are published. (What the
// platform's unit does, only the platform shows: the stand-in's unit is
// harness/localenv's.)
func testPublisherWaitsForTheDirectory(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client, kc := clusterClient(t, env)
	ns := env.Namespace
	cluster, err := inventory.LoadBase(env.RealPods().Inventory)
	if err != nil {
		t.Fatal(err)
	}
	local := loadInventory(t, env)
	token, err := inventory.ReadSecret(local.OpenBao.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	bao := openbao.New(local.OpenBao.Address, token)
	if cluster.LDAP == nil || cluster.LDAP.PublishedRoles == "" {
		t.Fatalf("%s names no ldap.publishedRoles", env.RealPods().Inventory)
	}
	entry := cluster.LDAP.PublishedRoles
	d, err := client.AppsV1().Deployments(ns).Get(ctx, "directory-lldap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replicas := *d.Spec.Replicas
	// A merge patch of the replicas alone: no conflict with the
	// controller's writes of the status.
	scale := func(ctx context.Context, n int32) {
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		if _, err := client.AppsV1().Deployments(ns).Patch(ctx, "directory-lldap", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scale(ctx, 0)
	// Also when the test fails: the next tests need lldap's replicas.
	t.Cleanup(func() {
		scale(context.Background(), replicas)
		waitAvailable(t, context.Background(), client, ns, "directory-lldap")
	})
	if err := poll.Eventually(ctx, poll.Probe{Endpoint: "Deployment " + ns + "/directory-lldap", Expect: "no pod left", Within: 3 * time.Minute}, func(ctx context.Context) error {
		list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: names.LabelRole + "=lldap"})
		if err != nil {
			return err
		}
		if n := len(list.Items); n > 0 {
			return poll.Saw("%d pods", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Nothing published: a new entry can come only from a new look.
	if err := bao.Do(ctx, http.MethodDelete, strings.Replace(entry, "/data/", "/metadata/", 1), nil, nil); err != nil {
		t.Fatal(err)
	}
	main := podsOf(t, ctx, client, ns, "directory")[0]
	unit := []string{"systemctl", "show", "--property=ActiveState", "--property=Result", "--property=NRestarts", "lldap-publish-roles.service"}
	if _, err := kc.Exec(ctx, ns, main.Name, plan.ContainerNode, []string{"systemctl", "restart", "lldap-publish-roles.service"}); err != nil {
		t.Fatal(err)
	}
	// Several of its looks (every 2 s): it tries again on its own, with
	// no exit for systemd to restart.
	probe := poll.Probe{Endpoint: "pod " + main.Name, Expect: "lldap-publish-roles active, not restarted, the main pod ready", Within: 10 * time.Second}
	if err := poll.Consistently(ctx, probe, func(ctx context.Context) error {
		out, err := kc.Exec(ctx, ns, main.Name, plan.ContainerNode, unit)
		if err != nil {
			return err
		}
		if !strings.Contains(string(out), "ActiveState=active") || !strings.Contains(string(out), "Result=success") || !strings.Contains(string(out), "NRestarts=0") {
			return fmt.Errorf("the unit: %s", strings.Join(strings.Fields(string(out)), " "))
		}
		got, err := client.CoreV1().Pods(ns).Get(ctx, main.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status != corev1.ConditionTrue {
				return fmt.Errorf("the main pod is not ready: %s %s", c.Reason, c.Message)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := bao.KV(ctx, entry); err == nil {
		t.Fatal("an entry was published while the directory had no pod")
	}
	scale(ctx, replicas)
	waitAvailable(t, ctx, client, ns, "directory-lldap")
	if err := poll.Eventually(ctx, poll.Probe{Endpoint: entry, Expect: "the members of " + cluster.LDAP.Group, Within: 2 * time.Minute}, func(ctx context.Context) error {
		got, err := bao.KV(ctx, entry)
		if err != nil {
			return poll.Saw("%v", err)
		}
		if got[cluster.LDAP.Group] != "admin,authelia-bind" {
			return poll.Saw("%v", got)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	out, _ := kc.Exec(ctx, ns, main.Name, plan.ContainerNode, unit)
	t.Logf("published once lldap answered; the unit: %s", strings.Join(strings.Fields(string(out)), " "))
}

// testRealPodsExecAndRestartCounts: an exec that fails reports the
// command's own exit status, and a service that dies is restarted by the
// kubelet in the same pod, which the pod's status counts.
func testRealPodsExecAndRestartCounts(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	client, cfg := clusterClient(t, env)
	// New pods: the restart below waits the kubelet's shortest back-off.
	freshPods(t, ctx, client, env.Namespace)
	pod := podsOf(t, ctx, client, env.Namespace, "directory-lldap")[0]
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"sh", "-c", "exit 3"}, "exited with status 3"},
		{[]string{"sh", "-c", "echo no >&2; exit 42"}, "exited with status 42: no"},
		{[]string{"cat", "/run/secrets/nothing"}, "exited with status 1: cat: /run/secrets/nothing: No such file or directory"},
	} {
		_, err := cfg.Exec(ctx, env.Namespace, pod.Name, "lldap", c.argv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("exec %q: %v; want %q", c.argv, err, c.want)
		}
	}
	if out, err := cfg.Exec(ctx, env.Namespace, pod.Name, "lldap", []string{"cat", "/etc/hostname"}); err != nil || strings.TrimSpace(string(out)) != pod.Name {
		t.Errorf("exec cat /etc/hostname: %q, %v", out, err)
	}

	found := discoverReal(t, ctx, env, env.RealPods().Kubeconfig())
	endpoint := found.Inventory().Roles["lldap"].Pods[0]
	before, err := found.Status(ctx, endpoint, world.Service)
	if err != nil {
		t.Fatal(err)
	}
	// A command that runs in the container when it stops is killed with
	// it: no answer, to be tried again, never the command's verdict.
	killedExec := make(chan error, 1)
	go func() {
		_, err := cfg.Exec(ctx, env.Namespace, pod.Name, "lldap", []string{"sleep", "1207"})
		killedExec <- err
	}()
	waitHostProcess(t, ctx, "sleep\x001207\x00")
	// slapd, the service under the supervisor, is killed on the host.
	if err := syscall.Kill(hostPID(t, ctx, env, pod, "lldap", true), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-killedExec:
		var exit *kube.ExitError
		if !poll.IsNoAnswer(err) || errors.As(err, &exit) || !strings.Contains(err.Error(), "killed (status 137)") {
			t.Errorf("an exec killed with its container: %v, want no answer naming the kill", err)
		}
	case <-ctx.Done():
		t.Fatal("the exec outlived its container")
	}
	// The exit counts at once, also while the container waits in the
	// kubelet's crash-loop back-off (on a stock kubelet, after the suites'
	// restarts, it may wait minutes before the restart count rises).
	probe := poll.Probe{Endpoint: "pod " + pod.Name, Expect: "its service's exit in the same pod", Within: time.Minute}
	var after *inventory.PodStatus
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		after, err = found.Status(ctx, endpoint, world.Service)
		if err != nil {
			return err
		}
		if after.UID != before.UID || after.ExitCount() != before.ExitCount()+1 {
			return poll.Saw("uid %s, %d exits (before: %s, %d)", after.UID, after.ExitCount(), before.UID, before.ExitCount())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The supervisor exits as its service did: killed by SIGKILL.
	if after.LastExit == nil || after.LastExit.Code != 128+int(syscall.SIGKILL) {
		t.Errorf("the container's last end: %s, want exit code 137", after.LastExit)
	}
	// Then it runs again in the same pod, after the back-off.
	waitAvailable(t, ctx, client, env.Namespace, "directory-lldap", 5*time.Minute+time.Minute)
}

// waitHostProcess waits until a process of the host has cmdline (its
// arguments, each ended by NUL): an exec has started.
func waitHostProcess(t *testing.T, ctx context.Context, cmdline string) {
	t.Helper()
	probe := poll.Probe{Endpoint: "the host's processes", Expect: fmt.Sprintf("one with command line %q", cmdline), Within: time.Minute}
	if err := poll.Eventually(ctx, probe, func(context.Context) error {
		all, err := filepath.Glob("/proc/[0-9]*/cmdline")
		if err != nil {
			return err
		}
		for _, f := range all {
			if got, err := os.ReadFile(f); err == nil && string(got) == cmdline {
				return nil
			}
		}
		return poll.Saw("none among %d", len(all))
	}); err != nil {
		t.Fatal(err)
	}
}

// testUnitsSuiteOnNodeImagePods deploys the mastodon example (a main pod
// and two sidekiq pods of the node's image, systemd as PID 1 in each) to
// the real cluster and asks each pod's systemd. (Its breaking case, a unit
// where its list does not put it, is in breakingCases.)
func testUnitsSuiteOnNodeImagePods(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	client, kc := clusterClient(t, env)
	w := &realWorld{env: env, client: client, kube: kc}
	results := runSuites(ctx, t, w.open(t, ctx, mastodonWorld), time.Minute, "units", "deployments")
	// No role of mastodon runs a service's image: no service's unit to
	// look for in its pods, and no companion.
	requirePassed(t, results, "node mastodon has no role that runs a service's image", "node mastodon has no role with a companion")
	matrix := strings.Join(results["units/units-where-their-lists-permit"].Steps[0].Notes, "\n")
	t.Log(matrix)
	sidekiq := podsOf(t, ctx, client, mastodonWorld, "mastodon-sidekiq")
	for _, want := range []string{"mastodon-web (mainUnits)", "mastodon-sidekiq-all (role sidekiq)", "prometheus-node-exporter (sharedUnits)", sidekiq[0].Name + " (sidekiq)", sidekiq[1].Name + " (sidekiq)"} {
		if !strings.Contains(matrix, want) {
			t.Errorf("the matrix lacks %q:\n%s", want, matrix)
		}
	}
	// The pods run systemd: its condition keeps mastodon-web out of a
	// sidekiq pod even when asked for.
	if out, err := kc.Exec(ctx, mastodonWorld, sidekiq[0].Name, plan.ContainerNode, []string{"systemctl", "show", "--property=ConditionResult,ActiveState", "mastodon-web.service"}); err != nil || !strings.Contains(string(out), "ConditionResult=no") {
		t.Errorf("mastodon-web in a sidekiq pod: %q, %v", out, err)
	}
}

// TestClusterWithoutPermissions runs as a user RBAC lets read the node's
// objects but neither exec nor port-forward: each gets a one-line error
// naming the permission. (KWOK's pods, which run nothing, are enough: the
// API server refuses before any kubelet is asked.)
func TestClusterWithoutPermissions(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exampleNode(t, ctx, "mastodon.nix")
	_, client := applyPlan(t, ctx, cp, node, "rbac")
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "rbac"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if _, err := client.RbacV1().Roles("rbac").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "rbac"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "reader", APIGroup: "rbac.authorization.k8s.io"}},
	}
	if _, err := client.RbacV1().RoleBindings("rbac").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.KubeconfigFor("reader")
	if err != nil {
		t.Fatal(err)
	}

	// mastodon's sidekiq pods have a port (its metrics): no port-forward.
	_, err = world.Discover(ctx, world.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: node, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "forbidden: the kubeconfig's user needs create on pods/portforward in namespace rbac") || strings.Contains(err.Error(), "\n") {
		t.Errorf("port-forward without the permission: %v", err)
	}
	// In the cluster, no port-forward is needed; exec is.
	found, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: node, Dir: t.TempDir(), Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	r := runSuites(ctx, t, found, 30*time.Second, "units")["units/units-where-their-lists-permit"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "forbidden: the kubeconfig's user needs create on pods/exec in namespace rbac") || strings.Contains(r.Reason, "\n") {
		t.Errorf("exec without the permission: %s: %s", r.Status, r.Reason)
	}
	// A Deployment the user may not read is named with the permission.
	if err := client.RbacV1().RoleBindings("rbac").Delete(ctx, "reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := poll.Probe{Endpoint: cp.Server, Expect: "the reader's reads to be refused", Within: 30 * time.Second}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		_, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: node, Dir: t.TempDir(), Direct: true})
		if err == nil || !strings.Contains(err.Error(), "Deployment rbac/mastodon: forbidden: the kubeconfig's user needs get on deployments in namespace rbac") {
			return poll.Saw("%v", err)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// streamProxy stands between the runner and the API server as its admin,
// counting the streaming upgrades it sees (exec, port-forward), and,
// refusing WebSocket, answering as an API server or proxy without it.
type streamProxy struct {
	refuseWebSocket bool
	mu              sync.Mutex
	upgrades        map[string]int // by the Upgrade header's protocol
}

func (p *streamProxy) count(protocol string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upgrades[protocol]
}

// start serves the proxy on loopback and returns a kubeconfig for it.
func (p *streamProxy) start(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := kube.Config(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(cfg.Host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{TLSClientConfig: tlsConfig}
	p.upgrades = map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if up := strings.ToLower(r.Header.Get("Upgrade")); up != "" {
			p.mu.Lock()
			p.upgrades[up]++
			p.mu.Unlock()
			if up == "websocket" && p.refuseWebSocket {
				http.Error(w, "no WebSocket here", http.StatusBadRequest)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: p, cluster: {server: \""+srv.URL+"\"}}]\ncontexts: [{name: p, context: {cluster: p}}]\ncurrent-context: p\n"), 0o600)
	return path
}

// testStreamingOverWebSocketAndSPDY: exec and port-forward to the real
// pods go over WebSocket where the API server speaks it, and fall back to
// SPDY where it, or a proxy on the way, refuses the WebSocket upgrade.
func testStreamingOverWebSocketAndSPDY(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, refuse := range []bool{false, true} {
		p := &streamProxy{refuseWebSocket: refuse}
		found := discoverReal(t, ctx, env, p.start(t, env.RealPods().Kubeconfig()))
		requirePassed(t, runSuites(ctx, t, found, 30*time.Second, "units", "ldap", "secrets"))
		ws, spdy := p.count("websocket"), p.count("spdy/3.1")
		switch {
		case !refuse && (ws == 0 || spdy != 0):
			t.Errorf("with WebSocket: %d WebSocket and %d SPDY upgrades; want WebSocket only", ws, spdy)
		case refuse && (ws == 0 || spdy == 0):
			t.Errorf("WebSocket refused: %d WebSocket and %d SPDY upgrades; want both, SPDY after the refusal", ws, spdy)
		}
		t.Logf("refuse WebSocket %v: %d WebSocket, %d SPDY upgrades", refuse, ws, spdy)
	}
}
