package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/fediversity/podroles/internal/kube"
)

// forwarder forwards the ports of a namespace's pods to loopback, each
// forward stopped when the Discovered that holds it is closed.
type forwarder struct {
	client    *kube.Client
	namespace string
	log       io.Writer
}

// forward forwards ports of a pod, and returns the local address of each,
// keyed by keys (the port as the inventory names it: the pod's port, or
// the Service's port that leads to it).
func (f forwarder) forward(ctx context.Context, d *Discovered, pod string, keys, ports []int32) (map[int]string, error) {
	fw, err := f.client.Forward(ctx, f.namespace, pod, ports, f.log)
	if err != nil {
		return nil, err
	}
	d.forwards = append(d.forwards, fw)
	out := map[int]string{}
	for i, addr := range fw.Addrs {
		out[int(keys[i])] = addr
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
