package scenarios

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
// that port, on the port the cluster resolved its target port to, as
// kubectl port-forward svc/NAME does: only the Service's own ports are
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

// serviceBackends are the pods behind a Service as Kubernetes routes to
// them: the ready endpoints of its EndpointSlices, which the cluster's
// endpointslice controller keeps from the Service's own selector as the
// cluster has it, each Service port resolved to a port of each pod (a
// target port that a pod does not declare leaves the pod out of that
// port).
type serviceBackends struct {
	// ready are the ready endpoints in name order: a pod's name, or
	// "address A" for an endpoint that is no pod.
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

// backendsOf lists the EndpointSlices of a Service.
func backendsOf(ctx context.Context, client kubernetes.Interface, svc *corev1.Service) (serviceBackends, error) {
	list, err := client.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	if err != nil {
		return serviceBackends{}, discoverError("EndpointSlice", svc.Namespace, svc.Name, "list", err)
	}
	return readyBackends(list.Items), nil
}

// readyBackends are the ready endpoints of a Service's EndpointSlices. An
// endpoint whose readiness is not stated is ready, as the API documents
// and kube-proxy takes it; a terminating pod's is not.
func readyBackends(all []discoveryv1.EndpointSlice) serviceBackends {
	b := serviceBackends{ports: map[string][]podPort{}}
	for _, es := range all {
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" {
				// An address the Service's own endpoints name: no
				// port-forward reaches it.
				b.ready = append(b.ready, "address "+strings.Join(ep.Addresses, ","))
				continue
			}
			b.ready = append(b.ready, ep.TargetRef.Name)
			for _, p := range es.Ports {
				if p.Port == nil {
					continue
				}
				name := ""
				if p.Name != nil {
					name = *p.Name
				}
				b.ports[name] = append(b.ports[name], podPort{pod: ep.TargetRef.Name, port: *p.Port})
			}
		}
	}
	slices.Sort(b.ready)
	b.ready = slices.Compact(b.ready)
	for name, at := range b.ports {
		slices.SortFunc(at, func(x, y podPort) int { return strings.Compare(x.pod, y.pod) })
		b.ports[name] = slices.CompactFunc(at, func(x, y podPort) bool { return x.pod == y.pod })
	}
	return b
}

// noPodBehind says why ports of a Service reach no pod: none is ready
// behind the Service at all (with its selector, which chose them), or the
// ready ones declare no target port of those ports.
func (b serviceBackends) noPodBehind(svc *corev1.Service, ports []string) string {
	if len(b.ready) == 0 {
		return fmt.Sprintf("the Service %s has no ready pod behind it (its EndpointSlices list none; %s)", svc.Name, selectorOf(svc))
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
