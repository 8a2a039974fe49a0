package kubenode_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
)

// This file runs before node_test.go, whose tests start the package's
// node: the killed run's test must start the next node itself.

// helperEnv makes the test binary a node's owner that the test kills.
const helperEnv = "PODROLES_TEST_NODE_HELPER"

// TestHelperNode is not a test: run by TestKilledRunLeavesNothing with
// helperEnv set, it starts a control plane and a node with a pod, says
// so, and waits to be killed.
func TestHelperNode(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper of TestKilledRunLeavesNothing")
	}
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir + "/cp", Loopback: localenv.RandomLoopback(), Nodes: true, RealNode: true, ServiceCIDR: kubenode.ServiceSubnet})
	if err != nil {
		t.Fatal(err)
	}
	n, err := kubenode.Start(ctx, kubenode.Options{Dir: dir + "/node", Server: cp.Server, CA: cp.CA(), AdminKubeconfig: cp.Kubeconfig, Wait: 45 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Containerd().ImportLocal(ctx, "podman", baseImage); err != nil {
		t.Fatal(err)
	}
	cfg, _ := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	client, _ := kubernetes.NewForConfig(cfg)
	deploy(t, ctx, client, webDeployment("killed", "web"))
	fmt.Println("READY")
	select {}
}

// TestKilledRunLeavesNothing kills a test binary whose node runs a pod
// (SIGKILL: nothing of it gets to clean up), and starts the next node:
// that start undoes what the dead run left (its pods' processes and
// shims, kube-proxy's nftables tables, mounts, links with the node's and
// the DNS's addresses and routes, cgroups, sysctls), so that the machine
// is as it was before the dead run. (The node's own processes, kube-proxy
// and CoreDNS among them, die with it: a detached node's are stopped by
// their recorded PIDs.)
func TestKilledRunLeavesNothing(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in the helper")
	}
	if os.Getenv(servers.DirEnv) == "" || os.Geteuid() != 0 {
		t.Skip("needs make servers and root")
	}
	if shared.node != nil {
		t.Skip("the package's node already runs: this test runs first, alone")
	}
	// The node is the machine's: another package's tests may hold it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	clean, err := kubenode.CleanTraces(ctx, 45*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "podroles-killed-node-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left := kubenode.MountsUnder(dir); len(left) > 0 {
			t.Errorf("still mounted in the dead run's folder %s: %v", dir, left)
			return
		}
		os.RemoveAll(dir)
	})
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNode$", "-test.timeout=50m")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "READY" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatal("the helper exited before its node was ready")
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		t.Fatal(ctx.Err())
	}
	cmd.Process.Kill()
	cmd.Wait()
	// What the dead run left: its pod, shims, mounts, links, cgroups.
	left := kubenode.TracesDiff(clean, kubenode.Traces())
	t.Logf("the dead run left %d traces, among them:\n%s", len(left), strings.Join(left[:min(len(left), 12)], "\n"))
	for _, want := range []string{"+ process", "+ mount", "+ link " + kubenode.PodBridge, "+ cgroup", "+ sysctl kernel.panic_on_oops",
		"+ nftables table ip kube-proxy", "+ route " + kubenode.Range, "+ route local " + kubenode.DNSIP} {
		if !slices.ContainsFunc(left, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("the dead run left no %q: the test proves nothing", want)
		}
	}
	// The next node undoes it before it starts.
	node(t)
	if diff := kubenode.TracesDiff(clean, shared.node.Before); len(diff) > 0 {
		t.Errorf("the next node started on a machine unlike the clean one:\n%s", strings.Join(diff, "\n"))
	}
}
