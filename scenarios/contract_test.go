package scenarios_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// TestDeploymentsJudgeByContract deploys the directory and mastodon
// examples to a control plane of real components as a real platform
// would: every image a registry's reference by digest, labels and
// selectors of the platform's own, a variable and a startup probe of its
// own beside the node's, Service ports named its way. The deployments
// suite judges by what node-surface fixes, so they pass; then a role of
// the node's image runs another image than the main pod, and
// deployments-as-planned fails naming the role. (KWOK's pods run nothing:
// these scenarios read the API server's objects only.)
func TestDeploymentsJudgeByContract(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	judged := regexp.MustCompile(`^deployments/(deployments|services)-as-planned$`)
	worlds := map[string]world.World{}
	for _, example := range []string{"directory", "mastodon"} {
		node := exampleNode(t, ctx, example+".nix")
		ns := "platform-" + example
		p, err := plan.Make(node, plan.Options{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		asAPlatformWould(p)
		if err := cp.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		found, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: cp.Kubeconfig, Namespace: ns, Node: node, Dir: t.TempDir(), Direct: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(found.Close)
		worlds[example] = found
		for id, r := range runSelected(t, ctx, found, 2*time.Minute, judged, "deployments") {
			if r.Status != scenarios.Passed {
				t.Errorf("%s: %s: %s: %s", example, id, r.Status, r.Reason)
			}
		}
	}

	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	sidekiq, err := client.AppsV1().Deployments("platform-mastodon").Get(ctx, "mastodon-sidekiq", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := registryImage("nodes", "mastodon-previous")
	sidekiq.Spec.Template.Spec.Containers[0].Image = other
	if _, err := client.AppsV1().Deployments("platform-mastodon").Update(ctx, sidekiq, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := runSelected(t, ctx, worlds["mastodon"], 3*time.Second, judged, "deployments")["deployments/deployments-as-planned"]
	want := "role sidekiq runs image " + other + " in container node, not the main pod's " + registryImage("nodes", "mastodon")
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, want) {
		t.Errorf("a role of the node's image on another image: %s: %s\nwant %q", r.Status, r.Reason, want)
	}
	if strings.Contains(r.Reason, "Deployment platform-mastodon/mastodon:") {
		t.Errorf("blames the main pod too: %s", r.Reason)
	}
}

// asAPlatformWould makes the plan's objects as a real platform's method
// would: images by digest from its registry, labels of its own, and what
// the contract leaves to the method done another way.
func asAPlatformWould(p *plan.Plan) {
	for _, d := range p.Deployments {
		role := d.Spec.Template.Labels[names.LabelRole]
		labels := map[string]string{"app.kubernetes.io/name": p.Node, "app.kubernetes.io/component": role, "app.kubernetes.io/managed-by": "fediversity"}
		d.Labels = labels
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		d.Spec.Template.Labels = map[string]string{"app.kubernetes.io/name": p.Node, "app.kubernetes.io/component": role, "app.kubernetes.io/managed-by": "fediversity", "pod-template-version": "7"}
		d.Spec.Template.Annotations = map[string]string{"fediversity.eu/deployed-by": "nixops4"}
		spec := &d.Spec.Template.Spec
		service := spec.Containers[0].Name
		for i := range spec.Containers {
			c := &spec.Containers[i]
			switch c.Name {
			case plan.ContainerNode:
				c.Image = registryImage("nodes", p.Node)
			case plan.ContainerCompanion:
				c.Image = registryImage("services", service)
			default:
				c.Image = registryImage("services", service)
				c.Env = append(c.Env, corev1.EnvVar{Name: "TZ", Value: "UTC"})
			}
		}
		for i := range spec.InitContainers {
			c := &spec.InitContainers[i]
			c.Image = "quay.io/openbao/openbao@sha256:" + digest("openbao 2.5.3")
			c.StartupProbe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/usr/local/bin/secrets-ready"}}}
		}
	}
	for _, svc := range p.Services {
		role := svc.Labels[names.LabelRole]
		svc.Labels = map[string]string{"app.kubernetes.io/name": p.Node, "app.kubernetes.io/component": role}
		svc.Spec.Selector = map[string]string{"app.kubernetes.io/name": p.Node, "app.kubernetes.io/component": role, "app.kubernetes.io/managed-by": "fediversity"}
		for i := range svc.Spec.Ports {
			port := &svc.Spec.Ports[i]
			port.Name = strings.ToLower(string(port.Protocol)) + "-" + port.TargetPort.String()
			port.TargetPort = intstr.FromInt32(port.Port)
		}
	}
}

// registryImage is a registry's reference of an image, by digest.
func registryImage(kind, name string) string {
	return "registry.fediversity.eu/" + kind + "/" + name + "@sha256:" + digest(name)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// runSelected runs the scenarios of suites that re selects against inv.
func runSelected(t *testing.T, ctx context.Context, w world.World, patience time.Duration, re *regexp.Regexp, suites ...string) map[string]*scenarios.Result {
	t.Helper()
	selected, err := scenarios.Select(suites)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*scenarios.Result{}
	// On real pods the reader of service-ldaps-bind is the runner's image.
	opts := scenarios.Options{Parallel: scenarios.DefaultParallel, Timeout: scenarios.DefaultTimeout, Patience: patience, Run: re, Disruptive: true, ProbeImage: builtRunnerImage(t)}
	for _, r := range scenarios.Run(ctx, w, selected, opts) {
		out[r.ID()] = r
	}
	return out
}
