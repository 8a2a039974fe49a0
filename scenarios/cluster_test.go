package scenarios_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/inventory"
	"github.com/fediversity/podroles/vmtests"
)

// TestDeploymentsSuite applies the directory example's plan to a control
// plane of real components with a KWOK node, runs the deployments suite,
// then breaks the cluster on purpose.
func TestDeploymentsSuite(t *testing.T) {
	t.Parallel()
	cp := vmtests.StartControlPlaneT(t, true)
	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dir := t.TempDir()
	s, _ := nixeval.FileSource("../examples/directory.nix")
	nodes, err := (&nixeval.Evaluator{}).Extract(ctx, []nixeval.Source{s})
	if err != nil {
		t.Fatal(err)
	}
	facts, _ := json.Marshal(nixeval.Document{Version: nixeval.FactsVersion, Nodes: nodes})
	os.WriteFile(filepath.Join(dir, "facts.json"), facts, 0o644)
	p, err := plan.Make(nodes[0], plan.Options{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
	invPath := filepath.Join(dir, "inventory.yaml")
	os.WriteFile(invPath, []byte("node: directory\ncluster:\n  kubeconfig: "+cp.Kubeconfig+"\n  namespace: default\n  factsFile: facts.json\n"), 0o644)
	inv, err := inventory.Load(invPath)
	if err != nil {
		t.Fatal(err)
	}
	suites, _ := scenarios.Select([]string{"deployments"})
	runAll := func(patience time.Duration) map[string]*scenarios.Result {
		out := map[string]*scenarios.Result{}
		for _, r := range scenarios.Run(ctx, inv, suites, scenarios.Options{Parallel: 2, Timeout: time.Minute, Patience: patience}) {
			out[r.ID()] = r
		}
		return out
	}
	for id, r := range runAll(30 * time.Second) {
		if r.Status != scenarios.Passed {
			t.Fatalf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}

	// Broken on purpose: a replica less, and the plain LDAP port on the
	// Service of lldap.
	lldap, _ := client.AppsV1().Deployments("default").Get(ctx, "directory-lldap", metav1.GetOptions{})
	one := int32(1)
	lldap.Spec.Replicas = &one
	if _, err := client.AppsV1().Deployments("default").Update(ctx, lldap, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, _ := client.CoreV1().Services("default").Get(ctx, "directory-lldap", metav1.GetOptions{})
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "ldap", Port: 3890, Protocol: corev1.ProtocolTCP})
	if _, err := client.CoreV1().Services("default").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	broken := runAll(2 * time.Second)
	if r := broken["deployments/deployments-as-planned"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, "Deployment default/directory-lldap") || !strings.Contains(r.Reason, "spec.replicas 1, planned 2") {
		t.Errorf("scaled down: %s: %s", r.Status, r.Reason)
	}
	if r := broken["deployments/services-as-planned"]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, "Service directory-lldap has ports 17170/TCP,3890/TCP,6360/TCP, planned exactly 17170/TCP,6360/TCP") {
		t.Errorf("port added: %s: %s", r.Status, r.Reason)
	}
}
