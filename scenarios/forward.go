package scenarios

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

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

// forwardService forwards each port of a Service to a ready pod behind
// that port, on the port its target port resolves to there, as kubectl
// port-forward svc/NAME does: only the Service's own ports are
// reachable, and only through the pods the Service itself leads to. The
// ports with no ready pod behind them are left out, and unreachable says
// why.
func (f forwarder) forwardService(ctx context.Context, d *Discovered, svc *corev1.Service, behind serviceBackends) (forwarded map[int]string, unreachable string, err error) {
	keys, ports := map[string][]int32{}, map[string][]int32{}
	var pods, missing []string
	for _, sp := range svc.Spec.Ports {
		at := behind.ports[sp.Name]
		if len(at) == 0 {
			missing = append(missing, strconv.Itoa(int(sp.Port)))
			continue
		}
		// The first in name order, so that each run reaches the same pod.
		pod := at[0].pod
		if keys[pod] == nil {
			pods = append(pods, pod)
		}
		keys[pod], ports[pod] = append(keys[pod], sp.Port), append(ports[pod], at[0].port)
	}
	forwarded = map[int]string{}
	for _, pod := range pods {
		out, err := f.forward(ctx, d, pod, keys[pod], ports[pod])
		if err != nil {
			return nil, "", err
		}
		for k, v := range out {
			forwarded[k] = v
		}
	}
	if len(missing) > 0 {
		unreachable = behind.noPodBehind(svc, missing)
	}
	return forwarded, unreachable, nil
}

// serviceBackends are the pods behind a Service as Kubernetes puts them
// there: the ready pods that the Service's own selector, as the cluster
// has it, selects in its namespace. Each Service port is resolved to a
// port of each pod, as the endpointslice controller and kubectl
// port-forward svc/ resolve it; a target port that a pod does not declare
// leaves the pod out of that port. The EndpointSlices would say the same,
// but cannot hold a pod whose address is on loopback, as the test control
// plane's KWOK pods' are.
type serviceBackends struct {
	// ready are the names of the ready pods, in name order.
	ready []string
	// ports maps the name of a Service port to the ready pods behind it,
	// with the port on each, in pod name order.
	ports map[string][]podPort
}

// podPort is a port of a pod.
type podPort struct {
	pod  string
	port int32
}

// backendsOf lists the pods that a Service's selector selects.
func backendsOf(ctx context.Context, client kubernetes.Interface, svc *corev1.Service) (serviceBackends, error) {
	if len(svc.Spec.Selector) == 0 {
		// Kubernetes selects no pod for it either.
		return readyBackends(svc, nil), nil
	}
	list, err := client.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return serviceBackends{}, discoverError("Pod", svc.Namespace, svc.Name+"-*", "list", err)
	}
	return readyBackends(svc, list.Items), nil
}

// readyBackends are the pods behind a Service among those its selector
// selects: Running with an address, not being deleted, and ready.
func readyBackends(svc *corev1.Service, selected []corev1.Pod) serviceBackends {
	b := serviceBackends{ports: map[string][]podPort{}}
	for i := range selected {
		pod := &selected[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !podReady(pod) {
			continue
		}
		b.ready = append(b.ready, pod.Name)
		for _, sp := range svc.Spec.Ports {
			if port, ok := targetPort(sp, pod); ok {
				b.ports[sp.Name] = append(b.ports[sp.Name], podPort{pod: pod.Name, port: port})
			}
		}
	}
	slices.Sort(b.ready)
	for _, at := range b.ports {
		slices.SortFunc(at, func(x, y podPort) int { return strings.Compare(x.pod, y.pod) })
	}
	return b
}

// targetPort resolves a Service port's target on a pod as Kubernetes
// does: a number, or the name of a container port of the same protocol.
func targetPort(sp corev1.ServicePort, pod *corev1.Pod) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal > 0:
		return sp.TargetPort.IntVal, true
	case sp.TargetPort.Type == intstr.Int:
		// Unset: the API server defaults it to the port.
		return sp.Port, true
	}
	protocol := sp.Protocol
	if protocol == "" {
		protocol = corev1.ProtocolTCP
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			cpProtocol := cp.Protocol
			if cpProtocol == "" {
				cpProtocol = corev1.ProtocolTCP
			}
			if cp.Name == sp.TargetPort.StrVal && cpProtocol == protocol {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// noPodBehind says why ports of a Service reach no pod: its selector
// selects no ready pod, or the ready ones declare no target port of those
// ports.
func (b serviceBackends) noPodBehind(svc *corev1.Service, ports []string) string {
	if len(b.ready) == 0 {
		return fmt.Sprintf("the Service %s has no ready pod behind it (%s)", svc.Name, selectorOf(svc))
	}
	var targets []string
	for _, sp := range svc.Spec.Ports {
		if slices.Contains(ports, strconv.Itoa(int(sp.Port))) {
			targets = append(targets, fmt.Sprintf("%d (target port %s)", sp.Port, sp.TargetPort.String()))
		}
	}
	return fmt.Sprintf("the Service %s leads to pods %s, which serve none of its ports %s (%s)", svc.Name, strings.Join(b.ready, ", "), strings.Join(targets, ", "), selectorOf(svc))
}

// selectorOf says which pods a Service selects, as the cluster has it.
func selectorOf(svc *corev1.Service) string {
	if len(svc.Spec.Selector) == 0 {
		return "it has no selector"
	}
	return "its selector " + labels.SelectorFromSet(svc.Spec.Selector).String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
