package kubenode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cluster's Services work as on any cluster: kube-proxy (nftables
// mode) sends a Service's cluster IP to its ready endpoints, and CoreDNS
// answers for cluster.local, at DNSIP, which the kubelet gives every pod.
//
// kube-proxy changes the host in two tables of its own, "ip kube-proxy"
// and "ip6 kube-proxy". Their rules match only the Services' addresses
// and the node's. The node records the tables before it starts
// kube-proxy, and deletes them when it stops: kube-proxy leaves them.
//   - It masquerades all traffic to cluster IPs (masqueradeAll), so that
//     a reply goes back through the host whatever its bridge netfilter
//     settings.
//   - Its conntrack settings are zero: it changes no sysctl.
//   - Its PATH holds nft alone. In nftables mode it would otherwise
//     "clean up" the iptables chains of its other modes at its start, and
//     load ip_vs (modprobe), on the shared host.
//
// CoreDNS has no forward plugin and serves cluster.local alone: a name
// outside the cluster is refused, never asked of another server.

const (
	// DNSIP is the cluster's DNS (CoreDNS), on NodeBridge.
	DNSIP = "198.18.0.10"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
)

// kubeProxyTables are the nftables tables kube-proxy makes, as "FAMILY
// NAME".
var kubeProxyTables = []string{"ip kube-proxy", "ip6 kube-proxy"}

// nftTables lists the host's nftables tables that are the node's, as
// "FAMILY NAME"; none where nft is missing.
func nftTables() []string {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	var tables []string
	for _, line := range strings.Split(string(out), "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "table "); ok && slices.Contains(kubeProxyTables, t) {
			tables = append(tables, t)
		}
	}
	return tables
}

// deleteTables deletes the nftables tables the record names, where they
// are.
func (s *hostState) deleteTables() error {
	var errs []error
	for _, t := range nftTables() {
		if !slices.Contains(s.NFTables, t) {
			continue
		}
		if out, err := exec.Command("nft", append([]string{"delete", "table"}, strings.Fields(t)...)...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s: %v: %s", t, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// writeKubeconfig writes a kubeconfig of the cluster for a user of the
// cluster's CA, named file in the node's pki folder.
func (n *Node) writeKubeconfig(file, user string, groups ...string) (string, error) {
	dir := n.path("pki")
	cert, key, err := n.CA.IssueClient(user, groups...)
	if err != nil {
		return "", err
	}
	base := strings.TrimSuffix(file, ".kubeconfig")
	certFile, keyFile := filepath.Join(dir, base+".pem"), filepath.Join(dir, base+".key")
	for name, data := range map[string][]byte{certFile: cert, keyFile: key} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			return "", err
		}
	}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: podroles
  cluster: {server: %[1]q, certificate-authority: %[2]q}
users:
- name: %[3]q
  user: {client-certificate: %[4]q, client-key: %[5]q}
contexts:
- name: podroles
  context: {cluster: podroles, user: %[3]q}
current-context: podroles
`, n.Server, filepath.Join(dir, "ca.pem"), user, certFile, keyFile)
	path := filepath.Join(dir, file)
	return path, os.WriteFile(path, []byte(kubeconfig), 0o600)
}

// freePort is a free TCP port of 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// kubeProxyConfig is kube-proxy's configuration: nftables mode, the
// node's name and address, health and metrics on loopback, NodePorts on
// the node's address only, every Service's traffic masqueraded, and no
// conntrack sysctl changed (all zero: "leave as is").
func (n *Node) kubeProxyConfig(kubeconfig string, healthz, metrics int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %[1]q}
hostnameOverride: %[2]q
bindAddress: %[3]s
healthzBindAddress: 127.0.0.1:%[4]d
metricsBindAddress: 127.0.0.1:%[5]d
mode: nftables
nftables: {masqueradeAll: true, syncPeriod: 30s, minSyncPeriod: 0s}
clusterCIDR: %[6]s
detectLocalMode: ClusterCIDR
nodePortAddresses: [%[3]s/32]
oomScoreAdj: 0
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, kubeconfig, n.Name, NodeIP, healthz, metrics, PodSubnet)
}

// startKubeProxy starts kube-proxy as the built-in system:kube-proxy
// user (bound to system:node-proxier), and waits until it has written
// its rules.
func (n *Node) startKubeProxy(ctx context.Context, t tools) error {
	kubeconfig, err := n.writeKubeconfig("kube-proxy.kubeconfig", "system:kube-proxy")
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
	metrics, err := freePort()
	if err != nil {
		return err
	}
	// A PATH of nft alone (see above).
	bin := n.path("kube-proxy", "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return err
	}
	if err := os.Symlink(t.nft, filepath.Join(bin, "nft")); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	config := n.path("kube-proxy", "config.yaml")
	if err := os.WriteFile(config, []byte(n.kubeProxyConfig(kubeconfig, healthz, metrics)), 0o600); err != nil {
		return err
	}
	p, err := n.startProcess("kube-proxy", []string{t.kubeProxy, "--config", config, "--v", "1"}, "PATH="+bin)
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return n.until(ctx, p, time.Minute, func() error {
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kube-proxy's healthz: %s", resp.Status)
		}
		if !slices.Contains(nftTables(), kubeProxyTables[0]) {
			return fmt.Errorf("no nftables table %s yet", kubeProxyTables[0])
		}
		return nil
	})
}

// corefile is CoreDNS's configuration: cluster.local from the API
// server, on DNSIP; nothing else is served, and nothing forwarded.
func corefile(kubeconfig string) string {
	return fmt.Sprintf(`%[1]s:53 {
    bind %[2]s
    errors
    log
    kubernetes %[1]s {
        kubeconfig %[3]q
    }
}
`, ClusterDomain, DNSIP, kubeconfig)
}

// corednsRole is what CoreDNS's kubernetes plugin reads.
var corednsRole = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
}

// corednsUser is CoreDNS's user of the cluster.
const corednsUser = "podroles:coredns"

// startDNS starts CoreDNS as a user that may read what it serves, and
// waits until it answers for the API server's own Service.
func (n *Node) startDNS(ctx context.Context, t tools) error {
	client, err := n.AdminClient()
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: corednsUser}, Rules: corednsRole}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: corednsUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: corednsUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: corednsUser}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	kubeconfig, err := n.writeKubeconfig("coredns.kubeconfig", corednsUser)
	if err != nil {
		return err
	}
	dir := n.path("coredns")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile(kubeconfig)), 0o600); err != nil {
		return err
	}
	p, err := n.startProcess("coredns", []string{t.coredns, "-conf", filepath.Join(dir, "Corefile")})
	if err != nil {
		return err
	}
	name := "kubernetes.default.svc." + ClusterDomain
	return n.until(ctx, p, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		addrs, err := Resolver().LookupHost(ctx, name)
		if err != nil {
			return err
		}
		if len(addrs) == 0 {
			return fmt.Errorf("no address of %s", name)
		}
		return nil
	})
}

// Resolver asks the cluster's DNS alone, over UDP.
func Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", net.JoinHostPort(DNSIP, "53"))
	}}
}

// APIServiceIP is the cluster IP of the Service kubernetes, which the
// pods' in-cluster clients dial (KUBERNETES_SERVICE_HOST): the first
// address of ServiceSubnet, as the API server gives it.
const APIServiceIP = "198.18.128.1"

// apiProxyPort is where the pods reach the API server, on NodeIP.
const apiProxyPort = 6443

// haproxyConfig forwards the pods' connections to the API server, which
// listens on a loopback address that pods cannot reach: TCP through, so
// that TLS ends at the API server; long timeouts, for watches and execs.
func haproxyConfig(server string) string {
	return fmt.Sprintf(`global
    maxconn 256
defaults
    mode tcp
    timeout connect 5s
    timeout client 1h
    timeout server 1h
frontend apiserver
    bind %s
    default_backend apiserver
backend apiserver
    server apiserver %s
`, net.JoinHostPort(NodeIP, fmt.Sprint(apiProxyPort)), server)
}

// startAPIForPods lets the pods reach the API server as on any cluster,
// at the Service kubernetes: HAProxy (Debian's) on the node's address
// forwards to the API server, and the Service's endpoint is HAProxy,
// since the API server (which the control plane starts with no endpoint
// reconciler) publishes none. It waits until the Service's cluster IP
// answers, with a certificate for it.
func (n *Node) startAPIForPods(ctx context.Context, t tools) error {
	u, err := url.Parse(n.Server)
	if err != nil {
		return fmt.Errorf("the API server's URL %q: %w", n.Server, err)
	}
	dir := n.path("apiserver-proxy")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	config := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(config, []byte(haproxyConfig(u.Host)), 0o600); err != nil {
		return err
	}
	p, err := n.startProcess("apiserver-proxy", []string{t.haproxy, "-db", "-f", config})
	if err != nil {
		return err
	}
	client, err := adminClient(n.AdminKubeconfig)
	if err != nil {
		return err
	}
	name, port, ready, tcp := "https", int32(apiProxyPort), true, corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes-podroles-node", Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "podroles-node"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{NodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("the endpoint of Service kubernetes: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(n.CA.PEM)
	https := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return n.until(ctx, p, time.Minute, func() error {
		resp, err := https.Get("https://" + APIServiceIP + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the API server at %s: %s", APIServiceIP, resp.Status)
		}
		return nil
	})
}
