package kubenode_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/harness/testenv"
)

// One node serves the package's tests (there is one per machine); it
// starts at the first test that needs it, and TestMain stops it.
var shared struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	node *kubenode.Node
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	testenv.Main(m, func() error {
		var errs []error
		if shared.node != nil {
			if err := shared.node.Stop(); err != nil {
				// Left for a look: what is mounted there would be lost.
				return fmt.Errorf("node stop: %w (%s is left)", err, shared.dir)
			}
		}
		if shared.cp != nil {
			errs = append(errs, shared.cp.Down())
		}
		if shared.dir != "" {
			errs = append(errs, os.RemoveAll(shared.dir))
		}
		return errors.Join(errs...)
	})
}

// baseImage is the local environment's Debian image (make images).
const baseImage = "localhost/podroles-debian:bookworm"

func node(t *testing.T) (*kubenode.Node, kubernetes.Interface, *rest.Config) {
	t.Helper()
	if os.Getenv(servers.DirEnv) == "" {
		t.Skipf("%s is not set: make test builds the kubelet and the control plane (make servers)", servers.DirEnv)
	}
	if os.Geteuid() != 0 {
		t.Skip("the node runs as root only")
	}
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "podroles-node-"); shared.err != nil {
			return
		}
		// The node is the machine's: another package's tests may hold it.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
		defer cancel()
		shared.cp, shared.err = controlplane.Start(ctx, controlplane.Options{Dir: shared.dir + "/cp", Loopback: localenv.RandomLoopback(), Nodes: true, RealNode: true, ServiceCIDR: kubenode.ServiceSubnet})
		if shared.err != nil {
			return
		}
		shared.node, shared.err = kubenode.Start(ctx, kubenode.Options{
			Dir: shared.dir + "/node", Server: shared.cp.Server, CA: shared.cp.CA(), AdminKubeconfig: shared.cp.Kubeconfig,
			Wait: 45 * time.Minute, Log: func(f string, args ...any) { fmt.Fprintf(os.Stderr, f+"\n", args...) },
		})
		if shared.err != nil {
			return
		}
		shared.err = shared.node.Containerd().ImportLocal(ctx, "podman", baseImage)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", shared.cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return shared.node, client, cfg
}

// webDeployment is a Deployment of one pod from the Debian image: a
// container that sleeps and one that answers HTTP on 8080 with its pod's
// name (perl, which the minimal Debian has).
func webDeployment(namespace, name string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": name}
	never := corev1.PullNever
	server := `use IO::Socket::INET; my $s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die $!;
while (my $c = $s->accept) { <$c>; print $c "HTTP/1.0 200 OK\r\n\r\nhello from $ENV{POD}\n"; close $c }`
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{
						{Name: "sleeper", Image: baseImage, ImagePullPolicy: never, Command: []string{"sleep", "infinity"}},
						{Name: "web", Image: baseImage, ImagePullPolicy: never, Command: []string{"perl", "-e", server},
							Env:            []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
							Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr(8080)}}, PeriodSeconds: 1}},
					},
				},
			},
		},
	}
}

// deploy creates the Deployment, and its namespace unless it is there,
// and waits until it is Available; it returns its pod.
func deploy(t testing.TB, ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) *corev1.Pod {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.Namespace}}, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.Cleanup(func() {
			client.CoreV1().Namespaces().Delete(context.Background(), d.Namespace, metav1.DeleteOptions{})
		})
	case !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := client.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	eventually(t, ctx, 2*time.Minute, "Deployment "+d.Name+" Available", func() error {
		got, err := client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		available := false
		for _, c := range got.Status.Conditions {
			available = available || (c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue)
		}
		if !available || got.Status.AvailableReplicas != *d.Spec.Replicas {
			return fmt.Errorf("%d of %d available", got.Status.AvailableReplicas, *d.Spec.Replicas)
		}
		pods, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil || len(pods.Items) != 1 {
			return fmt.Errorf("pods: %v", err)
		}
		pod = &pods.Items[0]
		return nil
	})
	t.Logf("Deployment %s Available after %s on node %s, pod IP %s", d.Name, time.Since(start).Round(time.Millisecond), pod.Spec.NodeName, pod.Status.PodIP)
	return pod
}

func eventually(t testing.TB, ctx context.Context, within time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// execIn runs argv in a container and returns its output and exit code.
func execIn(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, pod *corev1.Pod, container string, argv ...string) (string, int, error) {
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(cfg, http.MethodGet, req.URL().String())
	if err != nil {
		return "", 0, err
	}
	// An empty stdin: without one, WebSocket exec with stdout and stderr
	// loses the output of about one command in five (see the scenarios'
	// podExec).
	var out, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: bytes.NewReader(nil), Stdout: &out, Stderr: &stderr})
	out.Write(stderr.Bytes())
	var exit utilexec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitStatus(), nil
	}
	return out.String(), 0, err
}

// TestNodeRunsRealPods: a Deployment on the node is Available; exec
// returns the command's real exit code; port-forward reaches the
// container's server; killing a container's process is seen by the
// kubelet, which restarts it and counts the restart.
func TestNodeRunsRealPods(t *testing.T) {
	n, client, cfg := node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	pod := deploy(t, ctx, client, webDeployment("basics", "web"))

	for _, c := range []struct {
		argv []string
		code int
	}{{[]string{"sh", "-c", "exit 3"}, 3}, {[]string{"false"}, 1}, {[]string{"sh", "-c", "exit 42"}, 42}, {[]string{"true"}, 0}} {
		out, code, err := execIn(ctx, cfg, client, pod, "sleeper", c.argv...)
		if err != nil || code != c.code {
			t.Errorf("exec %q: exit %d, %v (%s); want exit %d", c.argv, code, err, out, c.code)
		}
	}
	if out, _, err := execIn(ctx, cfg, client, pod, "sleeper", "cat", "/etc/hostname"); err != nil || strings.TrimSpace(out) != pod.Name {
		t.Errorf("exec cat /etc/hostname: %q, %v; want the pod's name %s", out, err, pod.Name)
	}

	// port-forward, as kubectl port-forward does (SPDY).
	got := portForwardGet(t, ctx, cfg, client, pod, 8080)
	if want := "hello from " + pod.Name; strings.TrimSpace(got) != want {
		t.Errorf("port-forward to 8080: %q, want %q", got, want)
	}

	// Kill the sleeper's process on the host: the kubelet restarts it.
	var id string
	for _, c := range pod.Status.ContainerStatuses {
		if c.Name == "sleeper" {
			id = strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	pid, err := n.Containerd().TaskPID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := killProcess(pid); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, time.Minute, "restart count of sleeper", func() error {
		p, err := client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "sleeper" {
				if c.RestartCount != 1 || c.LastTerminationState.Terminated == nil {
					return fmt.Errorf("restart count %d", c.RestartCount)
				}
				if code := c.LastTerminationState.Terminated.ExitCode; code != 137 {
					t.Errorf("the killed container's exit code: %d, want 137", code)
				}
				return nil
			}
		}
		return errors.New("no status of sleeper")
	})
	t.Logf("restart counted %s after the kill", time.Since(killed).Round(time.Millisecond))
}

// TestPodsReachNothingOutside: a pod's routes lead to the node's range
// only; an address outside is unreachable, while the node's address is
// reached.
func TestPodsReachNothingOutside(t *testing.T) {
	_, client, cfg := node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pod := deploy(t, ctx, client, webDeployment("egress", "web"))
	routes, _, err := execIn(ctx, cfg, client, pod, "sleeper", "cat", "/proc/net/route")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the pod's routes:\n%s", routes)
	for _, line := range strings.Split(strings.TrimSpace(routes), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == "00000000" {
			t.Errorf("the pod has a default route: %s", line)
		}
	}
	for _, addr := range []string{"192.0.2.1", "1.1.1.1", "10.0.0.1"} {
		out, code, err := execIn(ctx, cfg, client, pod, "sleeper", "bash", "-c", "exec 3<>/dev/tcp/"+addr+"/80")
		if err != nil || code != 1 || !strings.Contains(out, "Network is unreachable") {
			t.Errorf("connect to %s from the pod: exit %d, %v: %q; want Network is unreachable", addr, code, err, out)
		}
	}
	// The kubelet's port on the node's address answers (TLS, which bash
	// does not speak: a connection is enough).
	if out, code, err := execIn(ctx, cfg, client, pod, "sleeper", "bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", kubenode.NodeIP, kubenode.KubeletPort)); err != nil || code != 0 {
		t.Errorf("connect to the node's address from the pod: exit %d, %v: %q", code, err, out)
	}
}

func portForwardGet(t *testing.T, ctx context.Context, cfg *rest.Config, client kubernetes.Interface, pod *corev1.Pod, port int) string {
	t.Helper()
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward")
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	defer func() { close(stop); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward: %v", err)
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}).Get(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
	if err != nil {
		t.Fatalf("port-forward GET: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func intstr(port int) intstrutil.IntOrString { return intstrutil.FromInt32(int32(port)) }

func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
