package world

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
// forward stopped when the Cluster that holds it is closed.
type forwarder struct {
	client    *kube.Client
	namespace string
	log       io.Writer
}

// forward forwards ports of a pod, and returns the local address of each,
// keyed by keys (the port as the inventory names it: the pod's port, or
// the Service's port that leads to it).
func (f forwarder) forward(ctx context.Context, c *Cluster, pod string, keys, ports []int32) (map[int]string, error) {
	fw, err := f.client.Forward(ctx, f.namespace, pod, ports, f.log)
	if err != nil {
		return nil, err
	}
	c.forwards = append(c.forwards, fw)
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
func (f forwarder) forwardService(ctx context.Context, c *Cluster, svc *corev1.Service, behind ServiceBackends) (forwarded map[int]string, unreachable string, err error) {
	keys, ports := map[string][]int32{}, map[string][]int32{}
	var pods, missing []string
	for _, sp := range svc.Spec.Ports {
		at := behind.Ports[sp.Name]
		if len(at) == 0 {
			missing = append(missing, strconv.Itoa(int(sp.Port)))
			continue
		}
		// The first in name order, so that each run reaches the same pod.
		pod := at[0].Pod
		if keys[pod] == nil {
			pods = append(pods, pod)
		}
		keys[pod], ports[pod] = append(keys[pod], sp.Port), append(ports[pod], at[0].Port)
	}
	forwarded = map[int]string{}
	for _, pod := range pods {
		out, err := f.forward(ctx, c, pod, keys[pod], ports[pod])
		if err != nil {
			return nil, "", err
		}
		for k, v := range out {
			forwarded[k] = v
		}
	}
	if len(missing) > 0 {
		unreachable = behind.NoPodBehind(svc, missing)
	}
	return forwarded, unreachable, nil
}

// ServiceBackends are the pods behind a Service as Kubernetes puts them
// there: the ready pods that the Service's own selector, as the cluster
// has it, selects in its namespace. Each Service port is resolved to a
// port of each pod, as the endpointslice controller and kubectl
// port-forward svc/ resolve it; a target port that a pod does not declare
// leaves the pod out of that port. The EndpointSlices would say the same,
// but cannot hold a pod whose address is on loopback, as the test control
// plane's KWOK pods' are.
type ServiceBackends struct {
	// Ready are the names of the ready pods, in name order.
	Ready []string
	// Ports maps the name of a Service port to the ready pods behind it,
	// with the port on each, in pod name order.
	Ports map[string][]PodPort
	// IPs maps each address of the ready pods to the pod's name.
	IPs map[string]string
}

// PodPort is a port of a pod.
type PodPort struct {
	Pod  string
	Port int32
}

// BackendsOf lists the pods that a Service's selector selects.
func BackendsOf(ctx context.Context, client kubernetes.Interface, svc *corev1.Service) (ServiceBackends, error) {
	if len(svc.Spec.Selector) == 0 {
		// Kubernetes selects no pod for it either.
		return readyBackends(svc, nil), nil
	}
	list, err := client.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return ServiceBackends{}, ObjectError("Pod", svc.Namespace, svc.Name+"-*", "list", err)
	}
	return readyBackends(svc, list.Items), nil
}

// readyBackends are the pods behind a Service among those its selector
// selects: Running with an address, not being deleted, and ready.
func readyBackends(svc *corev1.Service, selected []corev1.Pod) ServiceBackends {
	b := ServiceBackends{Ports: map[string][]PodPort{}, IPs: map[string]string{}}
	for i := range selected {
		pod := &selected[i]
		if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || !PodReady(pod) {
			continue
		}
		b.Ready = append(b.Ready, pod.Name)
		b.IPs[pod.Status.PodIP] = pod.Name
		for _, ip := range pod.Status.PodIPs {
			b.IPs[ip.IP] = pod.Name
		}
		for _, sp := range svc.Spec.Ports {
			if port, ok := targetPort(sp, pod); ok {
				b.Ports[sp.Name] = append(b.Ports[sp.Name], PodPort{Pod: pod.Name, Port: port})
			}
		}
	}
	slices.Sort(b.Ready)
	for _, at := range b.Ports {
		slices.SortFunc(at, func(x, y PodPort) int { return strings.Compare(x.Pod, y.Pod) })
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

// NoPodBehind says why ports of a Service reach no pod: its selector
// selects no ready pod, or the ready ones declare no target port of those
// ports.
func (b ServiceBackends) NoPodBehind(svc *corev1.Service, ports []string) string {
	if len(b.Ready) == 0 {
		return fmt.Sprintf("the Service %s has no ready pod behind it (%s)", svc.Name, SelectorOf(svc))
	}
	var targets []string
	for _, sp := range svc.Spec.Ports {
		if slices.Contains(ports, strconv.Itoa(int(sp.Port))) {
			targets = append(targets, fmt.Sprintf("%d (target port %s)", sp.Port, sp.TargetPort.String()))
		}
	}
	return fmt.Sprintf("the Service %s leads to pods %s, which serve none of its ports %s (%s)", svc.Name, strings.Join(b.Ready, ", "), strings.Join(targets, ", "), SelectorOf(svc))
}

// SelectorOf says which pods a Service selects, as the cluster has it.
func SelectorOf(svc *corev1.Service) string {
	if len(svc.Spec.Selector) == 0 {
		return "it has no selector"
	}
	return "its selector " + labels.SelectorFromSet(svc.Spec.Selector).String()
}

// PodReady says the pod's Ready condition holds.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
