// Package controlplane starts a Kubernetes control plane of real
// components on a loopback address. The tests and env up --cluster use
// it. It runs etcd and kube-apiserver. With Nodes it also runs the
// controllers, the scheduler and either KWOK as the kubelet of a fake
// node, whose pods run nothing (tests of many objects), or, with
// RealNode, what the machine's real node needs (harness/kubenode), which
// the caller starts. Its processes are a procgroup.Group of its own,
// stopped by their PIDs.
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
)

// ControlPlane is a Kubernetes control plane of real components built by
// make servers, on a loopback address: etcd and kube-apiserver, and with
// Nodes, kube-controller-manager, kube-scheduler and KWOK as the kubelet of
// a fake node (without RealNode), so that Deployments get Running pods.
type ControlPlane struct {
	dir   string
	procs *procgroup.Group
	// Kubeconfig is a kubeconfig of an admin (system:masters).
	Kubeconfig string
	// Server is the API server's URL.
	Server string
	// ca signs the API server's certificate and its users'.
	ca *pki.CA
}

// NodeName is the fake node of a control plane with Nodes.
const NodeName = "kwok-node-0"

// The last octets of the control plane's addresses on its loopback
// prefix: the API server's (and etcd's), and the fake node's kubelet's.
// An environment's table of hosts (harness/localenv) lists them.
const (
	HostAPIServer = 60
	HostFakeNode  = 70
)

// Options say where a control plane runs, and what it runs.
type Options struct {
	// Dir holds its certificates, data, logs and admin kubeconfig.
	Dir string
	// Loopback is the prefix of its addresses ("127.0.1" when empty):
	// the API server at HostAPIServer, the fake node's kubelet at
	// HostFakeNode.
	Loopback string
	// Nodes adds the controllers, the scheduler and a fake node.
	Nodes bool
	// RealNode readies the control plane for a real kubelet instead of
	// the fake node: the API server gets a client certificate of its CA
	// for the kubelets, and verifies theirs with its CA. With Nodes, no
	// fake node starts: the caller starts the real one (harness/kubenode).
	RealNode bool
	// ServiceCIDR is where Services get their cluster IPs, 10.96.0.0/16
	// when empty (never dialled from the host: traffic goes to loopback);
	// a real node's kube-proxy serves the range it is given.
	ServiceCIDR string
	// Detached processes outlive the process that started them.
	Detached bool
	// APIServerFlags are more flags of kube-apiserver (a real node's
	// kubelet client certificate, say), after ours: a flag given twice
	// takes its last value.
	APIServerFlags []string
}

// Start starts etcd and kube-apiserver, and writes an admin kubeconfig;
// with Nodes, also the controllers, the scheduler and a fake node. Stop
// it with Down, or Down(o.Dir) from another process.
func Start(ctx context.Context, o Options) (cp *ControlPlane, err error) {
	dir := o.Dir
	if o.Loopback == "" {
		o.Loopback = "127.0.1"
	}
	procs := procgroup.New(dir, o.Detached)
	etcd, apiserver := servers.Find("etcd"), servers.Find("kube-apiserver")
	if etcd == "" || apiserver == "" {
		return nil, fmt.Errorf("control plane: etcd and kube-apiserver are not built: run make servers")
	}
	for _, d := range []string{"logs", "control-plane"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			procs.Stop()
		}
	}()
	addr := fmt.Sprintf("%s.%d", o.Loopback, HostAPIServer)
	ports, err := freePorts(addr, 3)
	if err != nil {
		return nil, err
	}
	clientURL := "http://" + net.JoinHostPort(addr, strconv.Itoa(ports[0]))
	peerURL := "http://" + net.JoinHostPort(addr, strconv.Itoa(ports[1]))
	cpDir := filepath.Join(dir, "control-plane")
	p, err := procs.Start(ctx, "etcd", []string{etcd, "--name", "podroles", "--data-dir", filepath.Join(cpDir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "podroles=" + peerURL, "--unsafe-no-fsync", "--log-level", "warn",
	}, procgroup.Options{Dir: cpDir})
	if err != nil {
		return nil, err
	}
	if err := ready.HTTP(ctx, p, clientURL+"/health", nil); err != nil {
		return nil, err
	}

	// The API server's CA signs its serving certificate and the admin's
	// client certificate; a key of its own signs service-account tokens.
	ca, err := pki.NewCA("podroles test Kubernetes CA")
	if err != nil {
		return nil, err
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = "10.96.0.0/16"
	}
	services, err := netip.ParsePrefix(o.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("control plane: ServiceCIDR %q: %w", o.ServiceCIDR, err)
	}
	// The Service kubernetes's cluster IP too, where pods dial it.
	serving, servingKey, err := ca.Issue(addr, "kubernetes", "kubernetes.default", "kubernetes.default.svc", services.Addr().Next().String())
	if err != nil {
		return nil, err
	}
	admin, adminKey, err := ca.IssueClient("podroles-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	sa, err := pki.NewCA("service accounts")
	if err != nil {
		return nil, err
	}
	saKey, err := sa.KeyPEM()
	if err != nil {
		return nil, err
	}
	saPub, err := sa.PublicKeyPEM()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"ca.pem": ca.PEM, "serving.pem": serving, "serving.key": servingKey, "admin.pem": admin, "admin.key": adminKey, "sa.key": saKey, "sa.pub": saPub}
	// KWOK's pods need no token; a real node's get theirs mounted, as on
	// any cluster.
	admission := []string{"--disable-admission-plugins", "ServiceAccount"}
	var realNodeFlags []string
	if o.RealNode {
		// A real kubelet authenticates the API server's exec, port-forward
		// and logs with x509, and asks the API server whether it may.
		kubeletClient, kubeletClientKey, err := ca.IssueClient("kube-apiserver-kubelet-client", "system:masters")
		if err != nil {
			return nil, err
		}
		files["kubelet-client.pem"], files["kubelet-client.key"] = kubeletClient, kubeletClientKey
		realNodeFlags = []string{
			"--kubelet-client-certificate", filepath.Join(cpDir, "kubelet-client.pem"), "--kubelet-client-key", filepath.Join(cpDir, "kubelet-client.key"),
			"--kubelet-certificate-authority", filepath.Join(cpDir, "ca.pem"),
			// The pods of a node's image run systemd, which wants to write
			// cgroups.
			"--allow-privileged",
		}
		admission = nil
	}
	for name, data := range files {
		if err := writeFile(filepath.Join(cpDir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	server := "https://" + net.JoinHostPort(addr, strconv.Itoa(ports[2]))
	p, err = procs.Start(ctx, "kube-apiserver", append([]string{apiserver,
		"--etcd-servers", clientURL,
		"--bind-address", addr, "--advertise-address", addr, "--secure-port", strconv.Itoa(ports[2]),
		"--tls-cert-file", filepath.Join(cpDir, "serving.pem"), "--tls-private-key-file", filepath.Join(cpDir, "serving.key"),
		"--client-ca-file", filepath.Join(cpDir, "ca.pem"),
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(cpDir, "sa.pub"),
		"--service-account-signing-key-file", filepath.Join(cpDir, "sa.key"),
		"--service-cluster-ip-range", o.ServiceCIDR,
		"--authorization-mode", "Node,RBAC",
		"--endpoint-reconciler-type", "none",
		"--kubelet-preferred-address-types", "InternalIP",
	}, append(append(admission, realNodeFlags...), o.APIServerFlags...)...), procgroup.Options{Dir: cpDir})
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{dir: dir, procs: procs, Server: server, Kubeconfig: filepath.Join(dir, "kubeconfig"), ca: ca}
	if err := writeFile(cp.Kubeconfig, []byte(kubeconfig(server, cpDir, "admin")), 0o600); err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(cpDir, "admin.pem"), filepath.Join(cpDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	if err := ready.HTTP(ctx, p, server+"/readyz", &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}); err != nil {
		return nil, err
	}
	if o.Nodes {
		if err := cp.startNodes(ctx, o.Loopback, !o.RealNode); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// startNodes starts the controllers that turn Deployments into pods and
// Services' endpoints, the scheduler, and with fake, kwok with a node of
// its own at loopback's .70: what kwok serves exec and port-forward on,
// and the InternalIP of the node.
func (cp *ControlPlane) startNodes(ctx context.Context, loopback string, fake bool) error {
	tools := map[string]string{}
	names := []string{"kube-controller-manager", "kube-scheduler"}
	if fake {
		names = append(names, "kwok", "kwok-stages")
	}
	for _, name := range names {
		if tools[name] = servers.Find(name); tools[name] == "" {
			return fmt.Errorf("control plane: %s is not built: run make servers", name)
		}
	}
	addr, kubeletAddr, cpDir := fmt.Sprintf("%s.%d", loopback, HostAPIServer), fmt.Sprintf("%s.%d", loopback, HostFakeNode), filepath.Join(cp.dir, "control-plane")
	ports, err := freePorts(addr, 2)
	if err != nil {
		return err
	}
	kubeletPorts, err := freePorts(kubeletAddr, 1)
	if err != nil {
		return err
	}
	controllers := "deployment-controller,replicaset-controller,garbage-collector-controller,node-lifecycle-controller,endpointslice-controller,serviceaccount-controller"
	var controllerFlags []string
	if !fake {
		// A real kubelet mounts a pod's projected token with the
		// cluster's CA, from the ConfigMap kube-root-ca.crt that this
		// controller puts in each namespace.
		// The suites' Job (scenarios manifest) runs there.
		controllers += ",root-ca-certificate-publisher-controller,job-controller"
		controllerFlags = []string{"--root-ca-file", filepath.Join(cpDir, "ca.pem")}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		// node-lifecycle-controller clears the not-ready taint of the
		// fake node; without it no pod is scheduled.
		{"kube-controller-manager", append([]string{"--kubeconfig", cp.Kubeconfig, "--leader-elect=false", "--use-service-account-credentials=false",
			"--bind-address", addr, "--secure-port", strconv.Itoa(ports[0]),
			"--controllers", controllers}, controllerFlags...)},
		{"kube-scheduler", []string{"--kubeconfig", cp.Kubeconfig, "--leader-elect=false", "--bind-address", addr, "--secure-port", strconv.Itoa(ports[1])}},
	} {
		if _, err := cp.procs.Start(ctx, c.name, append([]string{tools[c.name]}, c.args...), procgroup.Options{Dir: cpDir}); err != nil {
			return err
		}
	}
	if !fake {
		return nil
	}
	// kwok refuses to start without stages; its own fast ones come from
	// its module, through kwok-stages.
	stages, err := exec.CommandContext(ctx, tools["kwok-stages"]).Output()
	if err != nil {
		return fmt.Errorf("kwok-stages: %w", err)
	}
	config := append([]byte(`apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodeLeaseParallelism: 4
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  # else port-forward upgrades are refused, and a discovery of the
  # cluster with them (behind which nothing answers)
  enableDebuggingHandlers: true
---
`), stages...)
	if err := writeFile(filepath.Join(cpDir, "kwok.yaml"), config, 0o644); err != nil {
		return err
	}
	// Its pods run nothing: exec and port-forward are the real node's.
	kubelet := net.JoinHostPort(kubeletAddr, strconv.Itoa(kubeletPorts[0]))
	kwok, err := cp.procs.Start(ctx, "kwok", []string{tools["kwok"], "--kubeconfig", cp.Kubeconfig, "--config", filepath.Join(cpDir, "kwok.yaml"),
		"--manage-all-nodes", "--node-ip", kubeletAddr, "--node-port", strconv.Itoa(kubeletPorts[0]), "--server-address", kubelet,
	}, procgroup.Options{Dir: cpDir})
	if err != nil {
		return err
	}
	client, err := cp.Client()
	if err != nil {
		return err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
		// With both addresses, kwok's stage leaves them alone when it makes
		// the node Ready again; with one, it writes them empty.
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: kubeletAddr}, {Type: corev1.NodeHostName, Address: NodeName}}},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", NodeName, err)
	}
	// A create drops the status, and kwok's stage that makes the node
	// Ready writes its addresses empty here: once it has, the node gets
	// its addresses, where the API server finds the kubelet for exec and
	// port-forward.
	// kwok makes the node Ready once its informers synced and its stage
	// ran, which a loaded machine delays by a minute and more (a cold
	// make test, its nix builds beside a run): the wait is bounded by the
	// caller's context and kwok's own life, and says what kwok said.
	probe := poll.Probe{Endpoint: "node " + NodeName, Expect: "Ready with InternalIP " + kubeletAddr, Within: kwokReadyWindow}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		if !kwok.Running() {
			return poll.Permanent(fmt.Errorf("kwok exited: %s", kwok.LastLines(5)))
		}
		n, err := client.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			return poll.Saw("not Ready yet")
		}
		if slices.Equal(n.Status.Addresses, node.Status.Addresses) {
			return nil
		}
		n.Status.Addresses = node.Status.Addresses
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return poll.Saw("addresses just set")
	})
	if err != nil && kwok.Running() {
		return fmt.Errorf("%w (kwok's log ends: %s)", err, kwok.LastLines(5))
	}
	return err
}

// kwokReadyWindow bounds the wait for kwok's node: long enough for a
// loaded machine, short of a test's own deadline.
const kwokReadyWindow = 5 * time.Minute

// Down stops the control plane's processes, by their PIDs.
func (cp *ControlPlane) Down() error { return cp.procs.Stop() }

// Down stops the control plane that another process started in dir.
func Down(dir string) error { return procgroup.StopRecorded(dir) }

// CA is the control plane's CA, which signs the API server's certificate
// and its users' client certificates: a real node's come from it too.
func (cp *ControlPlane) CA() *pki.CA { return cp.ca }

// Apply creates the objects of a plan, as the k8s method would deploy
// them.
func (cp *ControlPlane) Apply(ctx context.Context, p *plan.Plan) error {
	client, err := cp.Client()
	if err != nil {
		return err
	}
	if len(p.Deployments) > 0 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Deployments[0].Namespace}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Namespace %s: %w", ns.Name, err)
		}
	}
	for _, d := range p.Deployments {
		if _, err := client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Deployment %s: %w", d.Name, err)
		}
	}
	for _, svc := range p.Services {
		if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Service %s: %w", svc.Name, err)
		}
	}
	return nil
}

// Client returns a client of the control plane as its admin.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	c, err := kube.Connect(cp.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return c.Clientset, nil
}

// KubeconfigFor writes a kubeconfig of a user with a client certificate
// of the control plane's CA, in no group: what the user may do is what
// RBAC grants it.
func (cp *ControlPlane) KubeconfigFor(user string) (string, error) {
	cert, key, err := cp.ca.IssueClient(user)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cp.dir, "control-plane")
	if err := writeFile(filepath.Join(dir, user+".pem"), cert, 0o600); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(dir, user+".key"), key, 0o600); err != nil {
		return "", err
	}
	path := filepath.Join(cp.dir, "kubeconfig-"+user)
	return path, writeFile(path, []byte(kubeconfig(cp.Server, dir, user)), 0o600)
}

func kubeconfig(server, dir, user string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: podroles
  cluster:
    server: %[1]s
    certificate-authority: %[2]s/ca.pem
users:
- name: %[3]s
  user:
    client-certificate: %[2]s/%[3]s.pem
    client-key: %[2]s/%[3]s.key
contexts:
- name: podroles
  context: {cluster: podroles, user: %[3]s}
current-context: podroles
`, server, dir, user)
}

// freePorts returns n ports free on addr now.
func freePorts(addr string, n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return nil, fmt.Errorf("no free port on %s: %w", addr, err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeFile writes data with perm, also over a file that was there.
func writeFile(path string, data []byte, perm os.FileMode) error {
	if err := os.WriteFile(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Chmod(path, perm)
}
