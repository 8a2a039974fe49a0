package controlplane_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/plan"
)

// TestControlPlaneRunsThePlan applies the plan of the mastodon example to
// the control plane with its fake node: the Deployment mastodon-sidekiq
// gets its two replicas Running.
func TestControlPlaneRunsThePlan(t *testing.T) {
	cp := testenv.NewControlPlane(t, true)
	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	s, _ := nixeval.FileSource("../../examples/mastodon.nix")
	nodes, err := (&nixeval.Evaluator{Nix: nixtest.Nix(t)}).Extract(ctx, []nixeval.Source{s})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Make(nodes[0], plan.Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	sidekiq := p.Deployment("mastodon-sidekiq")
	selector := metav1.FormatLabelSelector(sidekiq.Spec.Selector)
	probe := poll.Probe{Endpoint: cp.Server, Expect: "2 Running pods of mastodon-sidekiq on " + controlplane.NodeName, Within: time.Minute}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		running := 0
		for _, pod := range pods.Items {
			if pod.Status.Phase == corev1.PodRunning && pod.Spec.NodeName == controlplane.NodeName {
				running++
			}
		}
		if running != 2 {
			return poll.Saw("%d pods, %d Running", len(pods.Items), running)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
