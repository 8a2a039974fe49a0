package controlplane_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/servers"
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

// TestKwokThatExitsFailsTheStart gives the control plane a kwok that
// refuses to run: the start must fail at once, quoting what kwok said,
// rather than wait the minutes a loaded machine may need for kwok's node,
// and must leave none of the processes it started behind.
func TestKwokThatExitsFailsTheStart(t *testing.T) {
	built := servers.Dir()
	if built == "" {
		t.Skip("the servers are not built (make test builds them)")
	}
	// The built servers, but for a kwok that exits with a word of its own.
	dir := t.TempDir()
	entries, err := os.ReadDir(built)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "kwok" {
			if err := os.Symlink(filepath.Join(built, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	const word = "kwok refuses on purpose"
	if err := os.WriteFile(filepath.Join(dir, "kwok"), []byte("#!/bin/sh\necho '"+word+"' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(servers.DirEnv, dir)

	// Well short of the wait for kwok's node: only kwok's exit can end
	// the start within it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cpDir := testenv.TempDir(t, "podroles-cp-")
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: cpDir, Loopback: localenv.RandomLoopback(), Nodes: true})
	if err == nil {
		cp.Down()
		t.Fatal("the control plane started with a kwok that exits")
	}
	t.Logf("the start failed: %v", err)
	if ctx.Err() != nil {
		t.Fatalf("the start waited out its deadline instead of seeing kwok exit: %v", err)
	}
	for _, want := range []string{"kwok exited", word} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	procs, err := procgroup.Load(cpDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.Running() {
			t.Errorf("%s (PID %d) still runs after the failed start", p.Name, p.PID)
			p.Stop(10 * time.Second)
		}
	}
}
