package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/klog/v2"

	"github.com/fediversity/podroles/internal/poll"
)

// forwarder port-forwards pods' ports to loopback through the API server,
// as kubectl port-forward does: over WebSocket, falling back to SPDY.
type forwarder struct {
	cfg       *rest.Config
	client    kubernetes.Interface
	namespace string
	log       io.Writer
}

// forward forwards ports of a pod to free loopback ports, and returns the
// local address of each, keyed by keys (the port as the inventory names
// it: the pod's port, or the Service's port that leads to it). The
// forward lives until d is closed; what goes wrong meanwhile (a
// connection the pod refuses, the forward lost) is one line each on f.log.
func (f forwarder) forward(ctx context.Context, d *Discovered, pod string, keys, ports []int32) (map[int]string, error) {
	logw := f.log
	if logw == nil {
		logw = io.Discard
	}
	where := f.namespace + "/" + pod
	logger := funcr.New(func(_, args string) { fmt.Fprintf(logw, "port-forward to pod %s: %s\n", where, args) }, funcr.Options{})
	req := f.client.CoreV1().RESTClient().Post().Resource("pods").Namespace(f.namespace).Name(pod).SubResource("portforward")
	transport, upgrader, err := spdy.RoundTripperFor(f.cfg)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerForStreamingWithLogger(logger, req.URL(), f.cfg)
	if err != nil {
		return nil, err
	}
	dialer := portforward.NewFallbackDialerForStreaming(wsDialer, spdyDialer, shouldFallBackToSPDY)
	var specs []string
	for _, p := range ports {
		specs = append(specs, fmt.Sprintf("0:%d", p))
	}
	// The forward outlives ctx, which only bounds its start.
	life, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesForStreamingWithContext(life, dialer, []string{"127.0.0.1"}, specs, ready, io.Discard, logw)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("port-forward pod %s: %w", where, err)
	}
	done := make(chan error, 1)
	go func() {
		err := pf.ForwardPorts()
		select {
		case <-ready:
			if err != nil && life.Err() == nil {
				fmt.Fprintf(logw, "port-forward to pod %s ended: %s\n", where, oneLine(err))
			}
		default:
		}
		done <- err
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, f.forwardError(pod, err)
	case <-ctx.Done():
		cancel()
		<-done
		return nil, ctx.Err()
	}
	d.forwards = append(d.forwards, runningForward{cancel: cancel, done: done})
	got, err := pf.GetPorts()
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for i, g := range got {
		out[int(keys[i])] = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(g.Local)))
	}
	return out, nil
}

// forwardService forwards each port of a Service to its target port on
// one of the Service's ready pods, as kubectl port-forward svc/NAME does:
// only the Service's own ports are reachable.
func (f forwarder) forwardService(ctx context.Context, d *Discovered, svc *corev1.Service, pods []corev1.Pod) (map[int]string, error) {
	var pod *corev1.Pod
	for i := range pods {
		if podReady(&pods[i]) {
			pod = &pods[i]
			break
		}
	}
	if pod == nil {
		return nil, errNoReadyPod
	}
	var keys, ports []int32
	for _, sp := range svc.Spec.Ports {
		target, err := targetPort(sp, pod)
		if err != nil {
			return nil, fmt.Errorf("the Service %s/%s: %w", svc.Namespace, svc.Name, err)
		}
		keys, ports = append(keys, sp.Port), append(ports, target)
	}
	return f.forward(ctx, d, pod.Name, keys, ports)
}

// errNoReadyPod is a Service with no ready pod to forward its ports to:
// what the suites say of it, not a reason not to run them.
var errNoReadyPod = errors.New("no ready pod behind it to forward its ports to")

// targetPort resolves a Service port's target on a pod: a number, or the
// name of a container port.
func targetPort(sp corev1.ServicePort, pod *corev1.Pod) (int32, error) {
	switch {
	case sp.TargetPort.IntValue() > 0:
		return int32(sp.TargetPort.IntValue()), nil
	case sp.TargetPort.String() == "" || sp.TargetPort.String() == "0":
		return sp.Port, nil
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == sp.TargetPort.String() {
				return cp.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("port %d targets %q, which no container of pod %s declares", sp.Port, sp.TargetPort.String(), pod.Name)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (f forwarder) forwardError(pod string, err error) error {
	if apierrors.IsForbidden(err) || containsForbidden(err) {
		return poll.Permanent(fmt.Errorf("port-forward pod %s/%s: forbidden: the kubeconfig's user needs create on pods/portforward in namespace %s", f.namespace, pod, f.namespace))
	}
	return fmt.Errorf("port-forward pod %s/%s: %v", f.namespace, pod, oneLine(err))
}
