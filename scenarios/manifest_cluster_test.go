package scenarios_test

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// testManifestRoleOnRealPods runs the suites against the directory
// example's real pods as the ServiceAccount of scenarios manifest, with a
// token of its own (TokenRequest), the API server's RBAC judging each
// call: from outside (port-forwards) every suite without --disruptive
// passes on its Role; then, one permission of that Role removed at a
// time, the discovery or a scenario that needs it fails naming it. (The
// Role of every suite with --disruptive, in the cluster's way, is
// testRealPodsPassEverySuite's first run.)
func testManifestRoleOnRealPods(t *testing.T) {
	env := realCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	client, _ := clusterClient(t, env)
	// Restarts of the cases before may keep pods in a back-off of
	// minutes: the runs judge new pods.
	freshPods(t, ctx, client, env.Namespace)
	r := newRunnerAccount(t, env, client)

	t.Run("from outside, every suite", func(t *testing.T) {
		r.t = t
		m := r.apply(ctx, scenarios.ManifestOptions{Outside: true})
		found, err := r.discover(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		results := map[string]*scenarios.Result{}
		for _, res := range scenarios.Run(ctx, found, scenarios.Suites(), clusterOptions(t, scenarios.Options{Parallel: scenarios.DefaultParallel, Timeout: scenarios.DefaultTimeout, Patience: scenarios.DefaultPatience})) {
			results[res.ID()] = res
		}
		found.Close()
		notForbidden(t, results, m)
		requirePassed(t, results, "run slapd standing in for lldap", scenarios.NotAskedToDisrupt)

		for _, g := range m.Grants {
			t.Run("without "+g.String(), func(t *testing.T) {
				r.t = t
				r.withoutPermission(ctx, m, g)
			})
		}
	})

	// --from-runner: the reader connects from the runner, and its Role
	// has no access to add or attach to a probe.
	t.Run("from outside with --from-runner, the ldap suite", func(t *testing.T) {
		r.t = t
		ldap, err := scenarios.Select([]string{"ldap"})
		if err != nil {
			t.Fatal(err)
		}
		m := r.apply(ctx, scenarios.ManifestOptions{Outside: true, FromRunner: true, Suites: ldap})
		for _, rule := range m.Role.Rules {
			if slices.Contains(rule.Resources, "pods/ephemeralcontainers") || slices.Contains(rule.Resources, "pods/attach") {
				t.Errorf("the Role of --from-runner grants %v on %v", rule.Verbs, rule.Resources)
			}
		}
		found, err := r.discover(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		defer found.Close()
		results := map[string]*scenarios.Result{}
		for _, res := range scenarios.Run(ctx, found, ldap, scenarios.Options{Parallel: scenarios.DefaultParallel, Timeout: scenarios.DefaultTimeout, Patience: scenarios.DefaultPatience, FromRunner: true}) {
			results[res.ID()] = res
		}
		notForbidden(t, results, m)
		requirePassed(t, results)
		if res := results["ldap/service-ldaps-bind"]; res == nil || !strings.Contains(strings.Join(res.Steps[0].Notes, "\n"), "from the runner (--from-runner)") {
			t.Errorf("service-ldaps-bind did not say it bound from the runner: %+v", res)
		}
	})
}

// runnerAccount is the ServiceAccount of scenarios manifest in the real
// cluster, with a kubeconfig of a token of its own.
type runnerAccount struct {
	t *testing.T
	// ns is the node's namespace, admin the cluster's admin kubeconfig.
	ns, admin string
	node      *facts.Node
	// dir keeps the runner's kubeconfig across subtests.
	dir        string
	client     kubernetes.Interface
	base       *inventory.Inventory
	kubeconfig string
}

// newRunnerAccount is the runner's account of the real cluster's node,
// removed when the test ends.
func newRunnerAccount(t *testing.T, env *localenv.Env, client kubernetes.Interface) *runnerAccount {
	t.Helper()
	base, err := inventory.LoadBase(env.RealPods().Inventory)
	if err != nil {
		t.Fatal(err)
	}
	r := &runnerAccount{t: t, ns: env.Namespace, admin: env.RealPods().Kubeconfig(), node: real.node, dir: real.dir, client: client, base: base}
	t.Cleanup(r.remove)
	return r
}

// apply applies the ServiceAccount, Role and RoleBinding of a manifest
// of every suite, and waits until RBAC grants what the Role holds.
func (r *runnerAccount) apply(ctx context.Context, o scenarios.ManifestOptions) *scenarios.Manifest {
	t := r.t
	t.Helper()
	o.Namespace, o.Node, o.Image = r.ns, r.node, "podroles:unused"
	m, err := scenarios.MakeManifest(o)
	if err != nil {
		t.Fatal(err)
	}
	ns := r.ns
	if _, err := r.client.CoreV1().ServiceAccounts(ns).Create(ctx, m.ServiceAccount, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := r.client.RbacV1().RoleBindings(ns).Create(ctx, m.RoleBinding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	r.setRules(ctx, m.Role.Rules)
	for _, g := range m.Grants {
		r.waitAllowed(ctx, g.Permission, true)
	}
	if r.kubeconfig == "" {
		r.kubeconfig = r.tokenKubeconfig(ctx)
	}
	return m
}

// remove deletes the ServiceAccount, its Role and RoleBinding.
func (r *runnerAccount) remove() {
	ctx, ns := context.Background(), r.ns
	r.client.RbacV1().RoleBindings(ns).Delete(ctx, scenarios.RunnerName, metav1.DeleteOptions{})
	r.client.RbacV1().Roles(ns).Delete(ctx, scenarios.RunnerName, metav1.DeleteOptions{})
	r.client.CoreV1().ServiceAccounts(ns).Delete(ctx, scenarios.RunnerName, metav1.DeleteOptions{})
}

// setRules makes the Role's rules these.
func (r *runnerAccount) setRules(ctx context.Context, rules []rbacv1.PolicyRule) {
	t := r.t
	t.Helper()
	roles := r.client.RbacV1().Roles(r.ns)
	role, err := roles.Get(ctx, scenarios.RunnerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		role = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: scenarios.RunnerName, Namespace: r.ns}, Rules: rules}
		_, err = roles.Create(ctx, role, metav1.CreateOptions{})
	} else if err == nil {
		role.Rules = rules
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// waitAllowed waits until RBAC allows the ServiceAccount p, or refuses
// it: its authorizer follows a Role's change within moments.
func (r *runnerAccount) waitAllowed(ctx context.Context, p scenarios.Permission, allowed bool) {
	t := r.t
	t.Helper()
	ns := r.ns
	resource, sub, _ := strings.Cut(p.Resource, "/")
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + scenarios.RunnerName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: p.Verb, Group: p.Group, Resource: resource, Subresource: sub,
		},
	}}
	probe := poll.Probe{Endpoint: "RBAC of " + review.Spec.User, Expect: fmt.Sprintf("%s allowed: %v", p, allowed), Within: 30 * time.Second}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		got, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if got.Status.Allowed != allowed {
			return poll.Saw("allowed: %v", got.Status.Allowed)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// tokenKubeconfig writes a kubeconfig of the cluster with a token of the
// ServiceAccount, as a runner outside the cluster would get one.
func (r *runnerAccount) tokenKubeconfig(ctx context.Context) string {
	t := r.t
	t.Helper()
	expires := int64(3600)
	tok, err := r.client.CoreV1().ServiceAccounts(r.ns).CreateToken(ctx, scenarios.RunnerName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expires}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := kube.Config(r.admin)
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["cluster"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthority: admin.CAFile, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos["runner"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["runner"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "runner"}
	kc.CurrentContext = "runner"
	// Outlives a subtest: the test's own folder.
	path := filepath.Join(r.dir, "runner-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// discover finds the node's world as the runner, in the cluster's way
// (direct) or through port-forwards.
func (r *runnerAccount) discover(ctx context.Context, direct bool) (*world.Cluster, error) {
	return world.Discover(ctx, world.DiscoverOptions{Kubeconfig: r.kubeconfig, Namespace: r.ns, Node: r.node, Dir: r.t.TempDir(), Base: r.base, Direct: direct})
}

// withoutPermission removes g's permission from the Role, and expects
// the discovery, or the first scenario that needs it and runs, to fail
// naming it, in one line. The Role is whole again after.
// newMainPod replaces the main pod with a new one, which has no probe,
// and waits until the Deployment is available again.
func (r *runnerAccount) newMainPod(ctx context.Context) {
	t := r.t
	t.Helper()
	main := names.MainName(r.node.Name)
	for _, p := range podsOf(t, ctx, r.client, r.ns, main) {
		if err := r.client.CoreV1().Pods(r.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAvailable(t, ctx, r.client, r.ns, main)
}

func (r *runnerAccount) withoutPermission(ctx context.Context, m *scenarios.Manifest, g scenarios.Grant) {
	t := r.t
	t.Helper()
	var rest []scenarios.Grant
	for _, other := range m.Grants {
		if other.Permission != g.Permission {
			rest = append(rest, other)
		}
	}
	r.setRules(ctx, scenarios.Rules(rest))
	r.waitAllowed(ctx, g.Permission, false)
	defer func() {
		r.setRules(ctx, m.Role.Rules)
		r.waitAllowed(ctx, g.Permission, true)
	}()
	want := fmt.Sprintf("forbidden: the kubeconfig's user needs %s in namespace %s", g.Permission, r.ns)
	if g.Permission.Resource == "pods/ephemeralcontainers" {
		// A run attaches to the probe that a run before added: only a
		// main pod with none needs to add one.
		r.newMainPod(ctx)
	}
	found, err := r.discover(ctx, false)
	if slices.Contains(g.By, "discovery") {
		if err == nil {
			found.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("the discovery without %s: %v, want %q", g.Permission, err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("the discovery, which needs no %s: %v", g.Permission, err)
	}
	defer found.Close()
	for _, id := range g.By {
		opts := clusterOptions(t, scenarios.Options{Parallel: 1, Timeout: 2 * time.Minute, Patience: 10 * time.Second, Run: regexp.MustCompile("^" + regexp.QuoteMeta(id) + "$")})
		res := scenarios.Run(ctx, found, scenarios.Suites(), opts)
		if len(res) != 1 {
			t.Fatalf("%s: %d results", id, len(res))
		}
		if res[0].Status == scenarios.Skipped {
			continue
		}
		if res[0].Status != scenarios.Failed || !strings.Contains(res[0].Reason, want) || strings.Contains(res[0].Reason, "\n") {
			t.Errorf("%s without %s: %s: %s, want %q", id, g.Permission, res[0].Status, res[0].Reason, want)
		}
		t.Logf("%s without %s: %s", id, g.Permission, res[0].Reason)
		return
	}
	t.Errorf("no scenario that needs %s ran: %v", g.Permission, g.By)
}

// notForbidden fails for each scenario that the API server refused
// something: the Role lacked what it used.
func notForbidden(t *testing.T, results map[string]*scenarios.Result, m *scenarios.Manifest) {
	t.Helper()
	for id, res := range results {
		text := res.Reason
		for _, s := range res.Steps {
			text += " " + s.Error
		}
		if strings.Contains(text, "forbidden") {
			t.Errorf("%s was refused by RBAC under the Role %v: %s", id, m.Role.Rules, text)
		}
	}
}

// TestManifestOnAControlPlane: the API server takes every object of the
// manifest as printed (the Job and ConfigMap too), and the runner finds
// the node's world as the manifest's ServiceAccount, with a token of its
// own, in the cluster's way. (KWOK's pods run nothing: the suites' own
// calls are testManifestRoleOnRealPods's.)
func TestManifestOnAControlPlane(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exampleNode(t, ctx, "directory.nix")
	const ns = "manifest"
	p, client := applyPlan(t, ctx, cp, node, ns)
	r := &runnerAccount{t: t, ns: ns, admin: cp.Kubeconfig, node: node, dir: t.TempDir(), client: client}
	m := r.apply(ctx, scenarios.ManifestOptions{Disruptive: true})
	full, err := scenarios.MakeManifest(scenarios.ManifestOptions{Namespace: ns, Node: node, Image: "podroles:unused", Disruptive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, full.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, full.Job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	found, err := r.discover(ctx, true)
	if err != nil {
		t.Fatalf("the discovery as the runner of the Role %v: %v", m.Role.Rules, err)
	}
	found.Close()
	if got := len(found.Inventory().Roles); got != len(p.Deployments) {
		t.Errorf("the runner found %d roles, want %d", got, len(p.Deployments))
	}
}
