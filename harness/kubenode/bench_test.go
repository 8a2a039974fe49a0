package kubenode_test

import (
	"context"
	"fmt"
	"os"
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

// BenchmarkNodeColdStart measures the real node's cold start against a
// running control plane, each step a metric: containerd up, the pause
// image written and imported, the kubelet started and the node Ready,
// Debian's image imported from the local engine (podman save | ctr
// import), and the first Deployment Available; then the node stops (not
// timed), leaving the machine as it was.
func BenchmarkNodeColdStart(b *testing.B) {
	if os.Getenv(servers.DirEnv) == "" || os.Geteuid() != 0 {
		b.Skip("needs make servers and root")
	}
	if shared.node != nil {
		b.Skip("the package's node runs: one per machine")
	}
	dir := b.TempDir()
	ctx := context.Background()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir + "/cp", Loopback: localenv.RandomLoopback(), Nodes: true, RealNode: true, ServiceCIDR: kubenode.ServiceSubnet})
	if err != nil {
		b.Fatal(err)
	}
	defer cp.Down()
	cfg, _ := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig)
	client, _ := kubernetes.NewForConfig(cfg)
	took := map[string]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		n, err := kubenode.Start(ctx, kubenode.Options{Dir: fmt.Sprintf("%s/node-%d", dir, i), Server: cp.Server, CA: cp.CA(), AdminKubeconfig: cp.Kubeconfig, Wait: 10 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range n.Took {
			took[s.What] += s.Took
		}
		mark := time.Now()
		if err := n.Containerd().ImportLocal(ctx, "podman", baseImage); err != nil {
			b.Fatal(err)
		}
		took["image import"] += time.Since(mark)
		mark = time.Now()
		deploy(b, ctx, client, webDeployment(fmt.Sprintf("bench-%d", i), "web"))
		took["first pod Available"] += time.Since(mark)
		took["cold start"] += time.Since(start)
		b.StopTimer()
		if err := n.Stop(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	for what, d := range took {
		b.ReportMetric(d.Seconds()/float64(b.N), strings.ReplaceAll(what, " ", "-")+"-s")
	}
}
