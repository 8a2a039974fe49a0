package scenarios_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios"
)

// jobSuites are what the Job runs: those that need no file of the
// runner's host (OpenBao's token, the portal's CA), which a platform
// would mount into the Job (docs/scenarios-run.md).
var jobSuites = []string{"deployments", "units", "ldap"}

// testManifestJobOnRealPods applies scenarios manifest as a platform
// would, with the runner's image that make images built: its Job runs
// in the node's namespace on the real node, finds the directory
// example's pods with the ServiceAccount's own token (the Service
// kubernetes, as any in-cluster client), and reaches lldap's Service by
// its name through the cluster's DNS. It passes; with lldap's Service
// selecting authelia's pods, the same Job fails for the reason it fails
// from outside.
func testManifestJobOnRealPods(t *testing.T) {
	env := realCluster(t)
	images, err := localenv.ImagesFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if images.Runner == "" {
		t.Skip("no runner image: make images builds it, and make test runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	client, _ := clusterClient(t, env)
	freshPods(t, ctx, client, env.Namespace)
	base := jobBase(t, env)
	suites, err := scenarios.Select(jobSuites)
	if err != nil {
		t.Fatal(err)
	}
	m, err := scenarios.MakeManifest(scenarios.ManifestOptions{Namespace: env.Namespace, Node: real.node, Image: images.Runner, Suites: suites, Base: base})
	if err != nil {
		t.Fatal(err)
	}

	log, ok := runJob(t, ctx, client, env.Namespace, m)
	if !ok {
		t.Fatalf("the Job failed on the deployment as it is:\n%s", log)
	}
	for _, want := range []string{
		"PASSED  ldap/service-ldaps-bind", "PASSED  deployments/services-as-planned", "PASSED  units/units-where-their-lists-permit",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the Job's report lacks %q:\n%s", want, log)
		}
	}
	t.Logf("the Job's report:\n%s", log)

	// The same break as the case of ldap/service-ldaps-bind from outside.
	mend := serviceSelectsOtherRole("directory-lldap", "directory-authelia")(t, ctx, &realWorld{env: env, client: client})
	log, ok = runJob(t, ctx, client, env.Namespace, m)
	mend()
	want := "FAILED  ldap/service-ldaps-bind"
	reason := "directory-lldap.directory.svc.cluster.local:6360"
	if ok || !strings.Contains(log, want) || !strings.Contains(log, reason) {
		t.Errorf("with lldap's Service on authelia's pods the Job passed, or failed otherwise (want %q, dialling %s):\n%s", want, reason, log)
	}
	t.Logf("the broken deployment's report:\n%s", log)
}

// jobBase is the cluster inventory's base with only what needs no file of
// the host: the ldap contract's port and DNs, and the roles' stand-ins.
func jobBase(t *testing.T, env *localenv.Env) []byte {
	t.Helper()
	inv, err := inventory.LoadBase(env.RealPods().Inventory)
	if err != nil {
		t.Fatal(err)
	}
	l := *inv.LDAP
	l.AdminPasswordFile = ""
	job := &inventory.Inventory{Node: inv.Node, LDAP: &l, Roles: inv.Roles}
	path := filepath.Join(t.TempDir(), "base.yaml")
	if err := job.Write(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// runJob applies the manifest (its Job anew), waits until the Job ends,
// and returns its pod's log (the text report) and whether it succeeded.
// Its objects are deleted when the test ends.
func runJob(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string, m *scenarios.Manifest) (string, bool) {
	t.Helper()
	remove := func() {
		ctx := context.Background()
		background := metav1.DeletePropagationBackground
		client.BatchV1().Jobs(ns).Delete(ctx, m.Job.Name, metav1.DeleteOptions{PropagationPolicy: &background})
		client.CoreV1().ConfigMaps(ns).Delete(ctx, m.ConfigMap.Name, metav1.DeleteOptions{})
		client.RbacV1().RoleBindings(ns).Delete(ctx, m.RoleBinding.Name, metav1.DeleteOptions{})
		client.RbacV1().Roles(ns).Delete(ctx, m.Role.Name, metav1.DeleteOptions{})
		client.CoreV1().ServiceAccounts(ns).Delete(ctx, m.ServiceAccount.Name, metav1.DeleteOptions{})
		// The Job's pods go with it, before the next run.
		poll.Eventually(ctx, poll.Probe{Endpoint: "Job " + m.Job.Name, Expect: "its pods gone", Within: time.Minute}, func(ctx context.Context) error {
			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + m.Job.Name})
			if err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return poll.Saw("%d pods", len(pods.Items))
			}
			return nil
		})
	}
	remove()
	t.Cleanup(remove)
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, m.ServiceAccount, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, m.Role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, m.RoleBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, m.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, m.Job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var job *batchv1.Job
	probe := poll.Probe{Endpoint: "Job " + ns + "/" + m.Job.Name, Expect: "to complete or fail", Within: 10 * time.Minute}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		var err error
		if job, err = client.BatchV1().Jobs(ns).Get(ctx, m.Job.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		for _, c := range job.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return poll.Saw("%d active, %d succeeded, %d failed", job.Status.Active, job.Status.Succeeded, job.Status.Failed)
	})
	pods, listErr := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + m.Job.Name})
	var log []byte
	if listErr == nil && len(pods.Items) > 0 {
		log, _ = client.CoreV1().Pods(ns).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "scenarios"}).DoRaw(ctx)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	return string(log), job.Status.Succeeded > 0
}
