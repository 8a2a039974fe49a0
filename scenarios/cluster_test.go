package scenarios_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/inventory"
	"github.com/fediversity/podroles/vmtests/controlplane"
	"github.com/fediversity/podroles/vmtests/localenv"
	"github.com/fediversity/podroles/vmtests/servers"
	"github.com/fediversity/podroles/vmtests/vmtest"
)

// One control plane serves every test of the package, each in namespaces
// of its own; TestMain stops it by its processes' PIDs.
var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := vmtest.StopEngine(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if shared.cp != nil {
		if err := shared.cp.Down(); err != nil {
			fmt.Fprintln(os.Stderr, "control plane down:", err)
			code = 1
		}
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
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
	})
	if shared.err != nil {
		if os.Getenv(servers.DirEnv) == "" {
			t.Skipf("%v (make test builds them)", shared.err)
		}
		t.Fatal(shared.err)
	}
	return shared.cp
}

// deployed is an example node deployed to the control plane: its facts,
// its plan applied in namespace, its pods bound through kwok.
type deployed struct {
	node *facts.Node
	plan *plan.Plan
	pods map[string]*controlplane.BoundPod
}

func deploy(t *testing.T, ctx context.Context, cp *controlplane.ControlPlane, example, namespace string, bindings controlplane.Bindings) *deployed {
	t.Helper()
	node := evaluateExample(t, ctx, example)
	p, err := plan.Make(node, plan.Options{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	pods, err := cp.Bind(ctx, p, bindings)
	if err != nil {
		t.Fatal(err)
	}
	return &deployed{node: node, plan: p, pods: pods}
}

// discover finds the node's world as `scenarios run --kubeconfig` does,
// through port-forwards that stop when the test ends.
func discover(t *testing.T, ctx context.Context, kubeconfig, namespace string, d *deployed, base *inventory.Inventory) *inventory.Inventory {
	t.Helper()
	found, err := scenarios.Discover(ctx, scenarios.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: namespace, Node: d.node, Dir: t.TempDir(), Base: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(found.Close)
	return found.Inventory
}

func runSuites(ctx context.Context, t *testing.T, inv *inventory.Inventory, patience time.Duration, names ...string) map[string]*scenarios.Result {
	t.Helper()
	suites, err := scenarios.Select(names)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*scenarios.Result{}
	for _, r := range scenarios.Run(ctx, inv, suites, scenarios.Options{Parallel: 2, Timeout: time.Minute, Patience: patience}) {
		out[r.ID()] = r
	}
	return out
}

func requirePassed(t *testing.T, results map[string]*scenarios.Result) {
	t.Helper()
	for id, r := range results {
		if r.Status != scenarios.Passed {
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
}

func podsOfRole(d *deployed, role string) []*controlplane.BoundPod {
	var out []*controlplane.BoundPod
	for _, p := range d.pods {
		if p.Role == role {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *controlplane.BoundPod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// TestDeploymentsSuite applies the directory example's plan to a control
// plane of real components with a KWOK node, runs the deployments suite,
// then breaks the cluster on purpose.
func TestDeploymentsSuite(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "directory.nix", "deployments", nil)
	inv := discover(t, ctx, cp.Kubeconfig, "deployments", d, nil)
	results := runSuites(ctx, t, inv, 30*time.Second, "deployments")
	requirePassed(t, results)
	if notes := strings.Join(results["deployments/service-units-not-in-node-pods"].Steps[0].Notes, "\n"); !strings.Contains(notes, "lldap (service of role lldap)") {
		t.Errorf("the matrix does not show the service units:\n%s", notes)
	}

	// Broken on purpose: a replica less, the plain LDAP port on the
	// Service of lldap, and lldap's unit running in the main pod.
	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	lldap, _ := client.AppsV1().Deployments("deployments").Get(ctx, "directory-lldap", metav1.GetOptions{})
	one := int32(1)
	lldap.Spec.Replicas = &one
	if _, err := client.AppsV1().Deployments("deployments").Update(ctx, lldap, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, _ := client.CoreV1().Services("deployments").Get(ctx, "directory-lldap", metav1.GetOptions{})
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "ldap", Port: 3890, Protocol: corev1.ProtocolTCP})
	if _, err := client.CoreV1().Services("deployments").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	main := podsOfRole(d, plan.MainRole)[0]
	if err := main.SetUnit("lldap", true); err != nil {
		t.Fatal(err)
	}
	broken := runSuites(ctx, t, inv, 2*time.Second, "deployments")
	if r := broken["deployments/deployments-as-planned"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, "Deployment deployments/directory-lldap") || !strings.Contains(r.Reason, "spec.replicas 1, planned 2") {
		t.Errorf("scaled down: %s: %s", r.Status, r.Reason)
	}
	if r := broken["deployments/services-as-planned"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, "Service directory-lldap has ports 17170/TCP,3890/TCP,6360/TCP, planned exactly 17170/TCP,6360/TCP") {
		t.Errorf("port added: %s: %s", r.Status, r.Reason)
	}
	want := fmt.Sprintf("unit lldap (service of role lldap) ran in pod %s of role main, where its list does not permit it", main.Name)
	if r := broken["deployments/service-units-not-in-node-pods"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, want) {
		t.Errorf("service unit in the main pod: %s: %s", r.Status, r.Reason)
	}
}

// TestUnitsSuite deploys the mastodon example (a main pod and two sidekiq
// pods of the node's image) and asks each pod's systemd through exec.
func TestUnitsSuite(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "mastodon.nix", "units", nil)
	inv := discover(t, ctx, cp.Kubeconfig, "units", d, nil)
	results := runSuites(ctx, t, inv, 30*time.Second, "units")
	requirePassed(t, results)
	matrix := strings.Join(results["units/units-where-their-lists-permit"].Steps[0].Notes, "\n")
	t.Log(matrix)
	sidekiq := podsOfRole(d, "sidekiq")
	for _, want := range []string{"mastodon-web (mainUnits)", "mastodon-sidekiq-all (role sidekiq)", "prometheus-node-exporter (sharedUnits)", sidekiq[0].Name + " (sidekiq)", sidekiq[1].Name + " (sidekiq)"} {
		if !strings.Contains(matrix, want) {
			t.Errorf("the matrix lacks %q:\n%s", want, matrix)
		}
	}

	// Broken on purpose: a main unit also in a sidekiq pod, a shared unit
	// missing from the other.
	if err := sidekiq[0].SetUnit("mastodon-web", true); err != nil {
		t.Fatal(err)
	}
	if err := sidekiq[1].SetUnit("prometheus-node-exporter", false); err != nil {
		t.Fatal(err)
	}
	r := runSuites(ctx, t, inv, 2*time.Second, "units")["units/units-where-their-lists-permit"]
	for _, want := range []string{
		fmt.Sprintf("unit mastodon-web (mainUnits) ran in pod %s of role sidekiq, where its list does not permit it", sidekiq[0].Name),
		fmt.Sprintf("unit prometheus-node-exporter (sharedUnits) is not active in pod %s of role sidekiq, where its list puts it", sidekiq[1].Name),
	} {
		if r.Status != scenarios.Failed || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: %s\nwant %q", r.Status, r.Reason, want)
		}
	}
	if strings.Contains(r.Reason, "mastodon-sidekiq-all") {
		t.Errorf("blames a unit that is where it belongs: %s", r.Reason)
	}

	// The restart count of the rotation suite is the pod's: same UID, the
	// service container's restart count from the pod's status.
	client, _ := cp.Client()
	pod := inv.Roles["sidekiq"].Pods[0]
	before, err := scenarios.PodStatus(ctx, inv, pod)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Pods("units").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got.Status.ContainerStatuses {
		got.Status.ContainerStatuses[i].RestartCount = 3
	}
	if _, err := client.CoreV1().Pods("units").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	after, err := scenarios.PodStatus(ctx, inv, pod)
	if err != nil {
		t.Fatal(err)
	}
	if before.UID != string(got.UID) || after.UID != before.UID || before.RestartCount != 0 || after.RestartCount != 3 {
		t.Errorf("status before %+v, after %+v; pod uid %s", before, after, got.UID)
	}
	if err := client.CoreV1().Pods("units").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	probe := poll.Probe{Endpoint: "pod " + pod.Name, Expect: "to be gone", Within: 30 * time.Second}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		_, err := scenarios.PodStatus(ctx, inv, pod)
		if err == nil {
			return poll.Saw("it still runs")
		}
		if !strings.Contains(err.Error(), "is gone: it was replaced by a new pod, not restarted in the same pod") {
			return err
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestLDAPSuiteOnClusterInventory binds the pods of the directory example
// to the two slapd replicas of a local environment through kwok's
// PortForward objects, and runs the ldap suite on the inventory found in
// the cluster, reached through port-forwards: it gives what it gives on
// the local inventory.
func TestLDAPSuiteOnClusterInventory(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	env := vmtest.NewEnv(t, localenv.Options{Node: "directory"})
	local, err := inventory.Load(env.Inventory, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "directory.nix", env.Namespace, env.Bindings())
	base, err := inventory.LoadBase(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	inv := discover(t, ctx, cp.Kubeconfig, env.Namespace, d, base)
	for name, r := range inv.Roles {
		endpoints := slices.Clone(r.Pods)
		if r.Service != nil {
			endpoints = append(endpoints, *r.Service)
		}
		for _, e := range endpoints {
			for port, addr := range e.Forwarded {
				if ap, err := netip.ParseAddrPort(addr); err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") {
					t.Errorf("role %s: %s port %d is reached at %s, not on loopback", name, e.Name, port, addr)
				}
			}
		}
	}
	onCluster := runSuites(ctx, t, inv, 30*time.Second, "ldap")
	onLocal := runSuites(ctx, t, local, 30*time.Second, "ldap")
	requirePassed(t, onCluster)
	for id, r := range onLocal {
		if c := onCluster[id]; c == nil || c.Status != r.Status {
			t.Errorf("%s: %s locally, %v on the cluster", id, r.Status, c)
		}
	}
	if notes := strings.Join(onCluster["ldap/each-pod-binds"].Steps[0].Notes, "\n"); !strings.Contains(notes, inv.Roles["lldap"].Pods[1].Name) {
		t.Errorf("each-pod-binds did not bind at the second pod: %s", notes)
	}

	// The second pod's server goes away: the bind at that pod fails,
	// named, while the Service (forwarded to the first pod) still answers.
	if err := env.Stop("slapd-1"); err != nil {
		t.Fatal(err)
	}
	broken := runSuites(ctx, t, inv, 3*time.Second, "ldap")
	second := inv.Roles["lldap"].Pods[1].Name
	if r := broken["ldap/each-pod-binds"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, "pod "+second+": ") || strings.Contains(r.Reason, inv.Roles["lldap"].Pods[0].Name) {
		t.Errorf("second pod's server stopped: %s: %s", r.Status, r.Reason)
	}
	if r := broken["ldap/service-ldaps-bind"]; r.Status != scenarios.Passed {
		t.Errorf("the Service: %s: %s", r.Status, r.Reason)
	}
}

// TestClusterWithoutPermissions runs as a user RBAC lets read the node's
// objects but neither exec nor port-forward: each gets a one-line error
// naming the permission.
func TestClusterWithoutPermissions(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "mastodon.nix", "rbac", nil)
	client, _ := cp.Client()
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
	_, err = scenarios.Discover(ctx, scenarios.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: d.node, Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "forbidden: the kubeconfig's user needs create on pods/portforward in namespace rbac") || strings.Contains(err.Error(), "\n") {
		t.Errorf("port-forward without the permission: %v", err)
	}
	// In the cluster, no port-forward is needed; exec is.
	found, err := scenarios.Discover(ctx, scenarios.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: d.node, Dir: t.TempDir(), Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	r := runSuites(ctx, t, found.Inventory, 30*time.Second, "units")["units/units-where-their-lists-permit"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "forbidden: the kubeconfig's user needs create on pods/exec in namespace rbac") || strings.Contains(r.Reason, "\n") {
		t.Errorf("exec without the permission: %s: %s", r.Status, r.Reason)
	}
	// A Deployment the user may not read is named with the permission.
	if err := client.RbacV1().RoleBindings("rbac").Delete(ctx, "reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := poll.Probe{Endpoint: cp.Server, Expect: "the reader's reads to be refused", Within: 30 * time.Second}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		_, err := scenarios.Discover(ctx, scenarios.DiscoverOptions{Kubeconfig: kubeconfig, Namespace: "rbac", Node: d.node, Dir: t.TempDir(), Direct: true})
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
func (p *streamProxy) start(t *testing.T, cp *controlplane.ControlPlane) string {
	t.Helper()
	cfg, err := kube.Config(cp.Kubeconfig)
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

// TestStreamingOverWebSocketAndSPDY: exec and port-forward go over
// WebSocket where the API server speaks it, and fall back to SPDY where
// it, or a proxy on the way, refuses the WebSocket upgrade.
func TestStreamingOverWebSocketAndSPDY(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	env := vmtest.NewEnv(t, localenv.Options{Node: "directory"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "directory.nix", "streaming", env.Bindings())
	base, err := inventory.LoadBase(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	for _, refuse := range []bool{false, true} {
		p := &streamProxy{refuseWebSocket: refuse}
		kubeconfig := p.start(t, cp)
		inv := discover(t, ctx, kubeconfig, "streaming", d, base)
		requirePassed(t, runSuites(ctx, t, inv, 30*time.Second, "units", "ldap"))
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

// TestRotationOnClusterInventory runs the secrets and rotation suites on
// the inventory found in the cluster: secrets read through exec in each
// pod (kwok maps a pod's /run/secrets to its environment pod's folder),
// restarts read from the pods' status (which MirrorStatus keeps, as a
// kubelet would, from the environment's pods), credentials revoked in
// OpenBao. The same results as on the local inventory.
func TestRotationOnClusterInventory(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	// A namespace of its own on the package's control plane.
	env := vmtest.NewEnv(t, localenv.Options{Node: "directory", Namespace: "rotation"})
	requireOpenBao(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := deploy(t, ctx, cp, "directory.nix", env.Namespace, env.Bindings())
	mirrorCtx, stopMirror := context.WithCancel(ctx)
	mirrored := make(chan error, 1)
	go func() { mirrored <- cp.MirrorStatus(mirrorCtx, d.pods) }()
	defer func() { stopMirror(); <-mirrored }()
	base, err := inventory.LoadBase(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	inv := discover(t, ctx, cp.Kubeconfig, env.Namespace, d, base)
	for _, pod := range inv.Roles["lldap"].Pods {
		if pod.StatusFile != "" || pod.SecretsDir != "" || pod.UID == "" {
			t.Fatalf("pod %s is not read through the cluster: %+v", pod.Name, pod)
		}
	}
	results := runSuites(ctx, t, inv, 30*time.Second, "secrets", "rotation")
	for id, r := range results {
		want := scenarios.Passed
		if id == "secrets/identity-not-readable" {
			want = scenarios.Skipped // a cluster pod's file system is not the host's to look at
		}
		if r.Status != want {
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
	if r := results["rotation/restart-secret-restarts"]; r == nil || len(r.Steps) == 0 || !strings.Contains(strings.Join(r.Steps[0].Notes, "\n"), "restarted its service in the same pod") {
		t.Errorf("no restart seen through the pods' status: %+v", r)
	}
}
