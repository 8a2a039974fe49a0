package kubenode_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/servers"
)

// TestServicesWorkFromAPod: a pod resolves a Service's name, as a role's
// is named (NODE-ROLE.NAMESPACE.svc.cluster.local), with the cluster's
// DNS, and its connections to the Service's cluster IP reach the
// Service's ready pods, never one that is not ready. A Service with no
// ready pod refuses; a name outside the cluster is refused by the DNS,
// which has no way to ask anyone else. The host reaches a cluster IP
// too (as the cluster's portal does).
func TestServicesWorkFromAPod(t *testing.T) {
	_, client, cfg := node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const ns, name = "services", "demo-web"
	fqdn := name + "." + ns + ".svc." + kubenode.ClusterDomain

	// Two ready pods behind the Service, and one of its pods that
	// serves too but is never ready.
	var readyPods []string
	for _, d := range []string{"web-a", "web-b"} {
		dep := webDeployment(ns, d)
		dep.Spec.Template.Labels["service"] = name
		readyPods = append(readyPods, deploy(t, ctx, client, dep).Name)
	}
	unready := webDeployment(ns, "web-unready")
	unready.Spec.Template.Labels["service"] = name
	unready.Spec.Template.Spec.Containers[1].ReadinessProbe.TCPSocket.Port = intstr(9)
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, unready, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var unreadyPod string
	eventually(t, ctx, 2*time.Minute, "the unready pod's server running", func() error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(unready.Spec.Selector.MatchLabels).String()})
		if err != nil || len(pods.Items) != 1 {
			return fmt.Errorf("pods: %v", err)
		}
		for _, c := range pods.Items[0].Status.ContainerStatuses {
			if c.Name == "web" && c.State.Running != nil {
				unreadyPod = pods.Items[0].Name
				return nil
			}
		}
		return fmt.Errorf("pod %s: web not running", pods.Items[0].Name)
	})

	svc, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"service": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "nobody"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"service": "nobody"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clientPod := deploy(t, ctx, client, webDeployment(ns, "client"))
	run := func(script string) (string, int) {
		t.Helper()
		out, code, err := execIn(ctx, cfg, client, clientPod, "sleeper", "bash", "-c", script)
		if err != nil {
			t.Fatalf("exec %q: %v", script, err)
		}
		return out, code
	}

	// The pod's DNS is the cluster's alone.
	resolv, _ := run("cat /etc/resolv.conf")
	t.Logf("the pod's resolv.conf:\n%s", resolv)
	if got := resolvField(resolv, "nameserver"); !slices.Equal(got, []string{kubenode.DNSIP}) {
		t.Errorf("the pod's nameservers: %v, want only %s", got, kubenode.DNSIP)
	}
	if search := resolvField(resolv, "search"); len(search) == 0 || search[0] != ns+".svc."+kubenode.ClusterDomain {
		t.Errorf("the pod's search domains: %v, want %s.svc.%s first", search, ns, kubenode.ClusterDomain)
	}

	// Its name, and its short name through the search domains, are the
	// Service's cluster IP.
	for _, n := range []string{fqdn, name} {
		eventually(t, ctx, 30*time.Second, "resolve "+n+" in the pod", func() error {
			out, code := run("getent hosts " + n)
			if f := strings.Fields(out); code != 0 || len(f) == 0 || f[0] != svc.Spec.ClusterIP {
				return fmt.Errorf("getent hosts %s: exit %d: %q, want %s", n, code, out, svc.Spec.ClusterIP)
			}
			return nil
		})
	}

	// Connections by name reach the ready pods, each of them, and never
	// the unready one.
	const tries = 20
	var answers []string
	eventually(t, ctx, 30*time.Second, "connect to "+fqdn+" from the pod", func() error {
		out, code := run(fmt.Sprintf(`for i in $(seq %d); do exec 3<>/dev/tcp/%s/80 || exit 1; printf 'GET / HTTP/1.0\r\n\r\n' >&3; grep hello <&3; exec 3<&-; done`, tries, fqdn))
		answers = strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(answers) != tries {
			return fmt.Errorf("exit %d, %d answers of %d: %q", code, len(answers), tries, out)
		}
		return nil
	})
	seen := map[string]int{}
	for _, a := range answers {
		pod := strings.TrimPrefix(a, "hello from ")
		seen[pod]++
		if !slices.Contains(readyPods, pod) {
			t.Errorf("a connection to the Service reached %q, not one of its ready pods %v (the unready one is %s)", pod, readyPods, unreadyPod)
		}
	}
	t.Logf("%d connections to %s (%s) reached %v", tries, fqdn, svc.Spec.ClusterIP, seen)
	for _, p := range readyPods {
		if seen[p] == 0 {
			t.Errorf("no connection of %d reached the ready pod %s: %v", tries, p, seen)
		}
	}

	// A Service with no ready pod refuses at once.
	if out, code := run(fmt.Sprintf("exec 3<>/dev/tcp/%s/80", empty.Spec.ClusterIP)); code == 0 || !strings.Contains(out, "Connection refused") {
		t.Errorf("connect to the Service with no pod: exit %d: %q, want Connection refused", code, out)
	}

	// A name outside the cluster: not found in the pod, refused by the
	// cluster's DNS, which links no plugin that asks other servers.
	if out, code := run("getent hosts example.com"); code != 2 {
		t.Errorf("getent hosts example.com in the pod: exit %d: %q, want 2 (not found)", code, out)
	}
	if rcode, err := dnsRcode("example.com."); err != nil || rcode != rcodeRefused {
		t.Errorf("the cluster's DNS for example.com: rcode %d, %v; want %d (REFUSED)", rcode, err, rcodeRefused)
	}
	if rcode, err := dnsRcode("nothing." + ns + ".svc." + kubenode.ClusterDomain + "."); err != nil || rcode != rcodeNXDomain {
		t.Errorf("the cluster's DNS for a Service that is not there: rcode %d, %v; want %d (NXDOMAIN)", rcode, err, rcodeNXDomain)
	}
	plugins, err := exec.Command(filepath.Join(os.Getenv(servers.DirEnv), "coredns"), "-plugins").Output()
	if err != nil {
		t.Fatalf("coredns -plugins: %v", err)
	}
	// What CoreDNS links: ours and what they need (metadata, transfer).
	if got, want := strings.Fields(string(plugins)), []string{"bind", "errors", "kubernetes", "log", "metadata", "transfer"}; !slices.Equal(got, want) {
		t.Errorf("coredns links the plugins %v, want %v alone (none that asks other servers: forward, grpc, etcd)", got, want)
	}

	// The host reaches the cluster IP too, from the node's address.
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}).Get("http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/")
	if err != nil {
		t.Fatalf("GET the Service's cluster IP from the host: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if pod := strings.TrimPrefix(strings.TrimSpace(string(body)), "hello from "); !slices.Contains(readyPods, pod) {
		t.Errorf("the host's GET of the Service's cluster IP: %q, want a ready pod's answer", body)
	}
}

// resolvField is the values of a resolv.conf's lines that start with key.
func resolvField(conf, key string) []string {
	var out []string
	for _, line := range strings.Split(conf, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == key {
			out = append(out, f[1:]...)
		}
	}
	return out
}

// DNS response codes (RFC 1035).
const (
	rcodeNXDomain = 3
	rcodeRefused  = 5
)

// dnsRcode asks the cluster's DNS for name's A record, over UDP, and
// returns the answer's response code.
func dnsRcode(name string) (int, error) {
	query := []byte{0x50, 0x52, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0} // id, recursion desired, one question
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		query = append(append(query, byte(len(label))), label...)
	}
	query = append(query, 0, 0, 1, 0, 1) // root, type A, class IN
	conn, err := net.DialTimeout("udp", net.JoinHostPort(kubenode.DNSIP, "53"), 2*time.Second)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write(query); err != nil {
		return 0, err
	}
	answer := make([]byte, 512)
	n, err := conn.Read(answer)
	if err != nil {
		return 0, err
	}
	if n < 12 || answer[0] != query[0] || answer[1] != query[1] {
		return 0, fmt.Errorf("not an answer to the query: % x", answer[:n])
	}
	return int(answer[3] & 0x0f), nil
}
