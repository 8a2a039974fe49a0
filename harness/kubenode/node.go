// Package kubenode runs the real node of the test cluster. It runs
// containerd and the kubelet that make servers builds, against a control
// plane it is given (its API server's URL, its CA, an admin's
// kubeconfig), so that the cluster's pods are real containers.
//
// The node is the machine's: one per machine, under a machine-wide lock,
// with every change to the machine recorded before it is made and undone
// when the node stops, or by the next node when a run died (see host.go).
// Its pods live on a bridge of their own with addresses in 198.18.0.0/15
// and routes to that range only: nothing they send leaves the machine.
// The kubelet serves on an address of that range too, on a second, empty
// bridge (this kernel has no dummy links), which the API server dials for
// exec, port-forward and logs. kube-proxy and CoreDNS make the cluster's
// Services work by address and by name (services.go).
package kubenode

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/pki"
)

// The node's addresses, all in 198.18.0.0/15 (RFC 2544's benchmarking
// range, which no real host of the Internet has).
const (
	// Range is what the pods may reach: their routes lead here only.
	Range = "198.18.0.0/15"
	// NodeIP is the node's address, on NodeBridge: the kubelet serves
	// there, and the local environment's servers that the pods use
	// (Postgres, OpenBao) listen there too.
	NodeIP     = "198.18.0.1"
	NodeBridge = "podroles-node"
	// PodSubnet is the pods' addresses, on PodBridge, whose gateway is
	// PodGateway.
	PodSubnet  = "198.18.1.0/24"
	PodGateway = "198.18.1.1"
	PodBridge  = "podroles-pods"
	// ServiceSubnet is the Services' cluster IPs, which kube-proxy
	// serves.
	ServiceSubnet = "198.18.128.0/24"
	// DefaultName is the node's name.
	DefaultName = "podroles-node"
	// KubeletPort is where the kubelet serves the API server, on NodeIP.
	KubeletPort = 10250
)

// Options say what the node joins and where it keeps its files.
type Options struct {
	// Dir holds everything of the node: containerd's root, state and
	// socket, the kubelet's root, certificates, logs.
	Dir string
	// Name is the node's name, DefaultName when empty.
	Name string
	// Server is the API server's URL; CA the cluster's CA, which signed
	// the API server's certificate, signs the node's, and signed the API
	// server's kubelet client certificate, which the kubelet trusts.
	Server string
	CA     *pki.CA
	// AdminKubeconfig is a kubeconfig of the cluster's admin: the node is
	// waited for with it, and its pods deleted through it when it stops.
	AdminKubeconfig string
	// Detached processes outlive the process that started them (env up).
	Detached bool
	// Wait is how long to wait for the machine's node lock, which another
	// test binary's node may hold.
	Wait time.Duration
	// StopHint says how to stop a detached node, for whoever finds it
	// running ("podroles env down --dir DIR").
	StopHint string
	// Log receives a line per step, with its duration; nil drops them.
	Log func(format string, args ...any)
}

// Node is a running node.
type Node struct {
	Options
	// PauseImage is the sandbox image, which Start imports.
	PauseImage string

	// Before is the machine's traces before the node started (Traces):
	// Stop fails unless they are the same after.
	Before []string
	// Took is how long each step of the start took, in order.
	Took []Step

	state               *hostState
	lock                *hostLock
	procs               *procgroup.Group
	containerd, kubelet *procgroup.Proc
}

// Step is a step of a node's start and how long it took.
type Step struct {
	What string
	Took time.Duration
}

// Start starts containerd and the kubelet, imports the pause image,
// waits until the node is Ready, and starts kube-proxy and the cluster's
// DNS. A node that a dead run left is undone first; a node of a running
// environment (env up) makes Start fail, naming it.
func Start(ctx context.Context, o Options) (n *Node, err error) {
	if o.Dir == "" || o.Server == "" || o.CA == nil || o.AdminKubeconfig == "" {
		return nil, errors.New("node: Dir, Server, CA and AdminKubeconfig are all needed")
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("node: containerd and the kubelet run as root only")
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	tools, err := findTools()
	if err != nil {
		return nil, err
	}
	lock, err := takeMachine(ctx, dir, o.Wait)
	if err != nil {
		return nil, err
	}
	node := &Node{Options: o, lock: lock}
	n = node
	defer func() {
		if err != nil {
			if stopErr := node.Stop(); stopErr != nil {
				err = fmt.Errorf("%w; and undoing the node: %v", err, stopErr)
			}
			n = nil
		}
	}()
	n.Before = Traces()
	if n.state, err = newHostState(dir, o.Detached); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.state.StopHint, n.state.Before = o.StopHint, n.Before
	if err := n.state.save(); err != nil {
		return nil, err
	}
	step := func(what string, do func() error) error {
		start := time.Now()
		if err := do(); err != nil {
			return fmt.Errorf("node: %s: %w", what, err)
		}
		n.Took = append(n.Took, Step{What: what, Took: time.Since(start)})
		o.Log("node: %s in %s", what, time.Since(start).Round(time.Millisecond))
		return nil
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"bridges", n.makeBridges},
		{"certificates", n.writeCertificates},
		{"containerd", func() error { return n.startContainerd(ctx, tools) }},
		{"pause image", func() error { return n.importPause(ctx) }},
		{"kubelet", func() error { return n.startKubelet(ctx, tools) }},
		{"node Ready", func() error { return n.waitReady(ctx) }},
		{"kube-proxy", func() error { return n.startKubeProxy(ctx, tools) }},
		{"cluster DNS", func() error { return n.startDNS(ctx, tools) }},
		{"API server for pods", func() error { return n.startAPIForPods(ctx, tools) }},
	}
	for _, s := range steps {
		if err := step(s.what, s.do); err != nil {
			return nil, err
		}
	}
	if o.Detached {
		// The node outlives this process: from now on its record, whose
		// processes run, says it is taken.
		lock.release()
	}
	return n, nil
}

// takeMachine takes the machine's node lock with no node running, once
// what a dead run left is undone: it waits up to wait for the lock, which
// a test binary with its node holds, and for a running environment's
// node (env up's, which has let the lock go) to be stopped.
func takeMachine(ctx context.Context, dir string, wait time.Duration) (*hostLock, error) {
	deadline := time.Now().Add(wait)
	for {
		lock, err := lockHost(ctx, time.Until(deadline))
		if err != nil {
			return nil, err
		}
		err = undoLeftovers(dir)
		if err == nil {
			return lock, nil
		}
		lock.release()
		if !errors.Is(err, errNodeBusy) || time.Now().After(deadline) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// undoLeftovers undoes the node that the record names, if a run left one,
// unless it is an environment's that still runs (and is not in dir).
func undoLeftovers(dir string) error {
	prev, err := readHostState()
	if err != nil || prev == nil {
		return err
	}
	if running := prev.runningDetached(); running != "" && prev.Dir != dir {
		return fmt.Errorf("%w: %s", errNodeBusy, running)
	}
	if err := prev.undo(); err != nil {
		return fmt.Errorf("node: undoing what the node in %s (process %d) left: %w", prev.Dir, prev.Owner.PID, err)
	}
	// What the record does not name but a node leaves is left too.
	var left []string
	if !waitGone(func() bool { left = leftovers(); return len(left) > 0 }, 5*time.Second) {
		return fmt.Errorf("node: after undoing what the node in %s (process %d) left, these remain: %s", prev.Dir, prev.Owner.PID, strings.Join(left, "; "))
	}
	return os.Remove(hostStatePath())
}

// tools are the programs the node runs.
type tools struct{ containerd, ctr, kubelet, kubeProxy, coredns, nft, haproxy, cniDir string }

func findTools() (tools, error) {
	var t tools
	var missing []string
	for _, x := range []struct {
		dst        *string
		name, hint string
	}{
		{&t.containerd, "containerd", "Debian: apt-get install containerd"},
		{&t.ctr, "ctr", "Debian: apt-get install containerd"},
		{&t.nft, "nft", "Debian: apt-get install nftables"},
		{&t.haproxy, "haproxy", "Debian: apt-get install haproxy"},
	} {
		p, err := exec.LookPath(x.name)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", x.name, x.hint))
		}
		*x.dst = p
	}
	for _, x := range []struct {
		dst  *string
		name string
	}{{&t.kubelet, "kubelet"}, {&t.kubeProxy, "kube-proxy"}, {&t.coredns, "coredns"}} {
		if p := servers.Find(x.name); p != "" {
			*x.dst = p
		} else {
			missing = append(missing, x.name+" (make servers builds it)")
		}
	}
	if _, err := exec.LookPath("runc"); err != nil {
		missing = append(missing, "runc (Debian: apt-get install runc)")
	}
	for _, d := range []string{"/usr/lib/cni", "/opt/cni/bin"} {
		if isExecutable(filepath.Join(d, "bridge")) {
			t.cniDir = d
			break
		}
	}
	if t.cniDir == "" {
		missing = append(missing, "CNI's bridge plugin (Debian: apt-get install containernetworking-plugins)")
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("node: missing: %s", strings.Join(missing, ", "))
	}
	return t, nil
}

func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

func (n *Node) path(parts ...string) string {
	return filepath.Join(append([]string{n.Dir}, parts...)...)
}

// containerdSocket is the socket of the node's containerd in dir.
func containerdSocket(dir string) string { return filepath.Join(dir, "containerd.sock") }

// makeBridges makes the node's bridges. The node's one holds the node's
// address and the DNS's, and the route to the whole Range: the host's
// own connections to cluster IPs leave from the node's address, and
// nothing sent to an address of Range that no pod has leaves the
// machine (it goes to the empty bridge).
func (n *Node) makeBridges() error {
	for _, args := range [][]string{
		{"link", "add", NodeBridge, "type", "bridge"},
		{"addr", "add", NodeIP + "/32", "dev", NodeBridge},
		{"addr", "add", DNSIP + "/32", "dev", NodeBridge},
		{"link", "set", NodeBridge, "up"},
		{"route", "add", Range, "dev", NodeBridge, "src", NodeIP},
		// CNI's bridge plugin gives it its gateway address.
		{"link", "add", PodBridge, "type", "bridge"},
		{"link", "set", PodBridge, "up"},
	} {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// writeCertificates writes the CA, the kubelet's serving certificate,
// and the node's kubeconfig with its client certificate (a member of
// system:nodes, which the Node authorizer knows by its name).
func (n *Node) writeCertificates() error {
	dir := n.path("pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	serving, servingKey, err := n.CA.Issue(n.Name, NodeIP)
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{"ca.pem": n.CA.PEM, "kubelet.pem": serving, "kubelet.key": servingKey} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	_, err = n.writeKubeconfig("node.kubeconfig", "system:node:"+n.Name, "system:nodes")
	return err
}

// startProcess starts a process of the node, with env added to this
// process's environment.
func (n *Node) startProcess(name string, argv []string, env ...string) (*procgroup.Proc, error) {
	if n.procs == nil {
		n.procs = procgroup.New(n.Dir, n.Detached)
	}
	p, err := n.procs.Start(context.Background(), name, argv, procgroup.Options{Dir: n.Dir, Env: env})
	if err != nil {
		return nil, err
	}
	n.state.Procs = append(n.state.Procs, p)
	return p, n.state.save()
}

// containerdConfig is containerd's configuration: everything in the
// node's folder; the CRI with the pause image, CNI from the node's folder,
// oom_score_adj clamped to containerd's own (runc cannot lower it without
// CAP_SYS_RESOURCE, which this machine's root lacks), network namespaces
// under its state, no AppArmor (this kernel has none), and none of the
// plugins that write fixed paths or reach out.
func (n *Node) containerdConfig(t tools) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = %[3]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[5]q
    conf_dir = %[6]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = %[7]q
        SystemdCgroup = false
`, n.path("containerd", "root"), n.path("containerd", "state"), containerdSocket(n.Dir), n.PauseImage, t.cniDir, n.path("cni", "net.d"), n.path("containerd", "runc"))
}

// cniNetwork is the name of the pods' network.
const cniNetwork = "podroles-node"

// cniConfig puts the pods on PodBridge, with addresses of PodSubnet and a
// route to Range only: no default route, no masquerade.
func (n *Node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": %[6]q,
  "plugins": [{
    "type": "bridge", "bridge": %[1]q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "dataDir": %[2]q,
      "ranges": [[{"subnet": %[3]q, "gateway": %[4]q}]], "routes": [{"dst": %[5]q}]}
  }]
}
`, PodBridge, n.path("cni", "ipam"), PodSubnet, PodGateway, Range, cniNetwork)
}

func (n *Node) startContainerd(ctx context.Context, t tools) error {
	sum, err := pauseDigest()
	if err != nil {
		return err
	}
	n.PauseImage = "podroles.local/pause:" + sum
	for _, d := range []string{"containerd", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(n.path(d), 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(n.path("containerd", "config.toml"), []byte(n.containerdConfig(t)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(n.path("cni", "net.d", "10-podroles.conflist"), []byte(n.cniConfig()), 0o600); err != nil {
		return err
	}
	if n.containerd, err = n.startProcess("containerd", []string{t.containerd, "--config", n.path("containerd", "config.toml")}); err != nil {
		return err
	}
	return n.until(ctx, n.containerd, 20*time.Second, func() error {
		_, err := n.Containerd().ctr(ctx, nil, "version")
		return err
	})
}

// until polls ready until it passes, p dies, or within passes.
func (n *Node) until(ctx context.Context, p *procgroup.Proc, within time.Duration, ready func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if p != nil && !p.Running() {
			return fmt.Errorf("%s exited: %s", p.Name, p.LastLines(6))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kubeletConfig is the kubelet's configuration. Everything it can be told
// to keep in the node's folder is there; it serves on NodeIP only, with
// x509 authentication (the API server's kubelet client certificate) and
// authorization by the API server (webhook), never anonymous. What this
// machine needs: cgroup v1 allowed (failCgroupV1), cgroupfs (containerd
// 1.6 does not say its driver), no swap check, no iptables chains of its
// own on the shared host. The pods' DNS is the cluster's (DNSIP), and
// nothing of the host's resolv.conf. Eviction thresholds low, so that a full disk of
// others does not evict the tests' pods. The crash-loop back-off is the
// kubelet's default (10 s doubling to 5 min): the suites must judge right
// on a node as shipped.
func (n *Node) kubeletConfig(healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
makeIPTablesUtilChains: false
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: %[3]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[4]d
tlsCertFile: %[5]s/kubelet.pem
tlsPrivateKeyFile: %[5]s/kubelet.key
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[5]s/ca.pem}
authorization: {mode: Webhook}
podLogsDir: %[6]s
volumePluginDir: %[7]s
resolvConf: ""
clusterDNS: [%[8]s]
clusterDomain: %[9]s
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
`, containerdSocket(n.Dir), NodeIP, KubeletPort, healthzPort, n.path("pki"), n.path("pod-logs"), n.path("volume-plugins"), DNSIP, ClusterDomain)
}

func (n *Node) startKubelet(ctx context.Context, t tools) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	healthz := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := os.WriteFile(n.path("kubelet.yaml"), []byte(n.kubeletConfig(healthz)), 0o600); err != nil {
		return err
	}
	if n.kubelet, err = n.startProcess("kubelet", []string{t.kubelet, "--config", n.path("kubelet.yaml"), "--kubeconfig", n.path("pki", "node.kubeconfig"),
		"--root-dir", n.path("kubelet"), "--hostname-override", n.Name, "--node-ip", NodeIP, "--v", "1"}); err != nil {
		return err
	}
	return nil
}

// AdminClient is a client of the cluster as its admin.
func (n *Node) AdminClient() (kubernetes.Interface, error) {
	return adminClient(n.AdminKubeconfig)
}

func adminClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	return kubernetes.NewForConfig(cfg)
}

func (n *Node) waitReady(ctx context.Context) error {
	client, err := n.AdminClient()
	if err != nil {
		return err
	}
	return n.until(ctx, n.kubelet, 2*time.Minute, func() error {
		node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }) {
					return fmt.Errorf("node %s is Ready but still tainted %v", n.Name, node.Spec.Taints)
				}
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready", n.Name)
	})
}

// Stop stops the node and undoes what it changed on the machine: the
// pods are deleted through the API while the kubelet runs (so that it
// tears their sandboxes and networks down), then the kubelet stops,
// containerd's leftover tasks are killed, containerd stops, and the rest
// is undone from the host state. It releases the machine's node lock.
func (n *Node) Stop() error {
	if n.state == nil {
		n.lock.release()
		return nil
	}
	if n.lock == nil || n.lock.f == nil {
		// A detached node let the lock go when it started.
		lock, err := lockHost(context.Background(), time.Minute)
		if err != nil {
			return fmt.Errorf("node: stop: %w", err)
		}
		n.lock = lock
	}
	defer n.lock.release()
	var errs []error
	if n.kubelet != nil && n.kubelet.Running() {
		errs = append(errs, n.deletePods())
	}
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
	}
	if n.containerd != nil && n.containerd.Running() {
		errs = append(errs, n.removeTasks())
	}
	errs = append(errs, n.state.undo())
	if err := errors.Join(errs...); err != nil {
		// The record stays, for the next node to try again.
		return fmt.Errorf("node: stop: %w", err)
	}
	n.state = nil
	if err := os.Remove(hostStatePath()); err != nil {
		return err
	}
	if n.Before != nil {
		if diff := TracesDiff(n.Before, Traces()); len(diff) > 0 {
			return fmt.Errorf("node: stopped, but the machine is not as before: %s", strings.Join(diff, "; "))
		}
	}
	return nil
}

// deletePods cordons the node, so that the controllers' new pods stay
// off it, and deletes its pods with a short grace, waiting until the
// kubelet has stopped them all.
func (n *Node) deletePods() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client, err := n.AdminClient()
	if err != nil {
		return err
	}
	node, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	node.Spec.Unschedulable = true
	if _, err := client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("cordon node %s: %w", n.Name, err)
	}
	onNode := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String()}
	grace := int64(2)
	return n.until(ctx, n.kubelet, 50*time.Second, func() error {
		pods, err := client.CoreV1().Pods("").List(ctx, onNode)
		if err != nil {
			return err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				err := client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
				if err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods still on node %s", len(pods.Items), n.Name)
		}
		// The kubelet removes a pod's sandbox after the pod is gone.
		if out, err := n.Containerd().ctr(ctx, nil, "tasks", "ls", "-q"); err != nil || strings.TrimSpace(out) != "" {
			return fmt.Errorf("containerd still runs tasks: %s %v", oneline.Of(out), err)
		}
		return nil
	})
}

// removeTasks kills and removes whatever containers containerd still
// has, then stops it.
func (n *Node) removeTasks() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := n.Containerd()
	if out, err := c.ctr(ctx, nil, "tasks", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			c.ctr(ctx, nil, "tasks", "kill", "--signal", "SIGKILL", id)
			c.ctr(ctx, nil, "tasks", "delete", "--force", id)
		}
	}
	if out, err := c.ctr(ctx, nil, "containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(out) {
			c.ctr(ctx, nil, "containers", "delete", id)
		}
	}
	return n.containerd.Stop(10 * time.Second)
}

// Down stops the node of an environment from another process (env
// down): the one the machine's record says runs in dir, if any.
func Down(dir, adminKubeconfig string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// No node of dir's, nothing to wait for: the lock may be another
	// run's for as long as its tests take.
	if s, err := readHostState(); err != nil || s == nil || s.Dir != dir {
		return err
	}
	lock, err := lockHost(context.Background(), time.Minute)
	if err != nil {
		return err
	}
	s, err := readHostState()
	if err != nil || s == nil || s.Dir != dir {
		lock.release()
		return err // stopped meanwhile
	}
	n := &Node{Options: Options{Dir: dir, Name: DefaultName, AdminKubeconfig: adminKubeconfig}, state: s, lock: lock, Before: s.Before}
	for _, p := range s.Procs {
		switch p.Name {
		case "kubelet":
			n.kubelet = p
		case "containerd":
			n.containerd = p
		}
	}
	return n.Stop()
}

// pauseDigest is the first 12 hex digits of the pause program's SHA-256:
// the pause image's tag, so that another program is another image.
func pauseDigest() (string, error) {
	bin, err := pauseBinary()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))[:12], nil
}

// importPause imports the pause image: the static pause program alone,
// FROM scratch, run as nobody.
func (n *Node) importPause(ctx context.Context) error {
	bin, err := pauseBinary()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	img := Image{Ref: n.PauseImage, Files: []File{{Name: "pause", Mode: 0o755, Data: data}}}
	img.Config.Entrypoint, img.Config.User = []string{"/pause"}, "65535:65535"
	return n.Containerd().Import(ctx, img)
}

// PauseEnv names the pause program, when it is not beside podroles.
const PauseEnv = "PODROLES_PAUSE"

// pauseBinary finds the static pause program: $PODROLES_PAUSE, beside
// podroles ($PODROLES_BIN or this program), or built once for this
// process from the module's source.
func pauseBinary() (string, error) {
	if p := os.Getenv(PauseEnv); p != "" {
		return filepath.Abs(p)
	}
	var beside []string
	if p := os.Getenv("PODROLES_BIN"); p != "" {
		beside = append(beside, filepath.Join(filepath.Dir(p), "podroles-pause"))
	}
	if exe, err := os.Executable(); err == nil {
		beside = append(beside, filepath.Join(filepath.Dir(exe), "podroles-pause"))
	}
	for _, p := range beside {
		if isExecutable(p) {
			return filepath.Abs(p)
		}
	}
	return buildPause()
}

// buildPause builds the pause program from the module (tests run from
// its source), static, once per process.
var buildPause = sync.OnceValues(func() (string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("node: no podroles-pause beside podroles and no go to build it: make build builds it (or set %s)", PauseEnv)
	}
	out, err := servers.BuildOwn("github.com/fediversity/podroles/harness/kubenode/pause", filepath.Join(os.TempDir(), "podroles-pause-bin"), "podroles-pause", "-trimpath", "-ldflags", "-s -w")
	if err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	return out, nil
})
