package plan_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/plan"
)

// TestPlanPassesServerSideDryRun sends the plan of each k8s example to a
// real kube-apiserver as a server-side dry-run: the API server validates
// every object as it would on apply.
func TestPlanPassesServerSideDryRun(t *testing.T) {
	cp := testenv.NewControlPlane(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A client of our own, to collect the API server's warnings.
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's warnings (a duplicate port, a deprecated field)
	// fail the test too.
	warnings := &warningCollector{}
	cfg.WarningHandler = warnings
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "social"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for _, file := range []string{"mastodon.nix", "directory.nix"} {
		s, _ := nixeval.FileSource("../examples/" + file)
		nodes, err := (&nixeval.Evaluator{Nix: nixtest.Nix(t)}).Extract(ctx, []nixeval.Source{s})
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Make(nodes[0], plan.Options{Namespace: "social"})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Deployments {
			got, err := client.AppsV1().Deployments("social").Create(ctx, d, dry)
			if err != nil {
				t.Errorf("%s: Deployment %s: %v", file, d.Name, err)
				continue
			}
			if *got.Spec.Replicas != *d.Spec.Replicas {
				t.Errorf("Deployment %s: replicas %d", d.Name, *got.Spec.Replicas)
			}
			// A Deployment's template is validated as a pod only when the
			// ReplicaSet creates one: dry-run that pod too.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: d.Name + "-", Namespace: "social", Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations}, Spec: d.Spec.Template.Spec}
			if _, err := client.CoreV1().Pods("social").Create(ctx, pod, dry); err != nil {
				t.Errorf("%s: a pod of Deployment %s: %v", file, d.Name, err)
			}
		}
		for _, svc := range p.Services {
			if _, err := client.CoreV1().Services("social").Create(ctx, svc, dry); err != nil {
				t.Errorf("%s: Service %s: %v", file, svc.Name, err)
			}
		}
	}
	for _, w := range warnings.texts {
		t.Errorf("the API server warns: %s", w)
	}
	// A dry run stores nothing.
	if list, err := client.AppsV1().Deployments("social").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after a dry run: %v, %d deployments", err, len(list.Items))
	}
}

type warningCollector struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningCollector) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}
