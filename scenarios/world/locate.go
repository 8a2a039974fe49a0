package world

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/internal/loopback"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan/names"
)

// Place is where an address that a pod connects to leads, as the pod
// sees it (a database's URL, say), and how the runner reaches it there.
type Place struct {
	// Pod is the pod of the node that serves the address, and Role its
	// role; empty when none does.
	Pod, Role string
	// Where says where the address leads, for the report.
	Where string
	// Notes are what the world saw on the way (the pod's resolver's
	// answer), for the report.
	Notes []string
	// Reach gives the address the runner connects to, and what stops a
	// port-forward it opened.
	Reach func(ctx context.Context) (addr string, stop func(), err error)
}

// dialDirect reaches an address as it is.
func dialDirect(addr string) func(context.Context) (string, func(), error) {
	return func(context.Context) (string, func(), error) { return addr, func() {}, nil }
}

// loopbackHost is a host that is the pod itself, as the checks read a
// node's hosts (loopback.Is). In a cluster each pod has a loopback of its
// own; in the local environment the pods share the host's, where the
// addresses of 127.0.0.0/8 other than 127.0.0.1 stand for other hosts.
func loopbackHost(host string, cluster bool) bool {
	addr, ok := loopback.Host(host)
	if !ok || cluster || !addr.IsValid() || !addr.Is4() || addr.IsUnspecified() {
		return ok
	}
	return addr == netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// serviceOfHost reads a host as a Service's name, as a pod of namespace
// ns resolves it: NAME, NAME.NS, NAME.NS.svc and NAME.NS.svc.DOMAIN. other
// is the namespace of a Service of another namespace; isService is false
// for a host that is no Service's name (an address, a host of a domain).
func serviceOfHost(host, ns string) (name, other string, isService bool) {
	if net.ParseIP(host) != nil {
		return "", "", false
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	switch {
	case len(labels) == 1:
		return labels[0], "", true
	case len(labels) >= 3 && labels[2] == "svc", len(labels) == 2 && labels[1] == ns:
		if labels[1] != ns {
			return labels[0], labels[1], true
		}
		return labels[0], "", true
	}
	return "", "", false
}

// namespacePods are the pods of the node's namespace, by name and
// address.
type namespacePods struct {
	node         string
	byName, byIP map[string]*corev1.Pod
}

// place is the database served by pod p: a pod of the node (by the plan's
// labels), or another pod of the namespace.
func (n *namespacePods) place(p *corev1.Pod, where string, reach func(context.Context) (string, func(), error)) *Place {
	if p.Labels[names.LabelNode] == n.node {
		return &Place{Pod: p.Name, Role: p.Labels[names.LabelRole], Where: where, Reach: reach}
	}
	return &Place{Where: where + ", a pod of the namespace that is none of the node's", Reach: reach}
}

// behindService is the database behind a Service: the ready endpoints of
// the Service's port that the URL's port names, each a pod of the
// namespace or an address out of them (a Service without selector).
func (n *namespacePods) behindService(ctx context.Context, c *Cluster, svc *corev1.Service, port int, inCluster bool) (*Place, error) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if int(svc.Spec.Ports[i].Port) == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, fmt.Errorf("Service %s has no port %d, the port of the URL", svc.Name, port)
	}
	endpointSlices, err := c.Clientset.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	if err != nil {
		return nil, ObjectError("EndpointSlice", svc.Namespace, svc.Name+"-*", "list", err)
	}
	type backend struct {
		pod  *corev1.Pod
		addr string
		port int32
	}
	var backends []backend
	for _, es := range endpointSlices.Items {
		var at *int32
		for _, ep := range es.Ports {
			if ep.Name != nil && *ep.Name == sp.Name && ep.Port != nil {
				at = ep.Port
			}
		}
		if at == nil {
			continue
		}
		for _, e := range es.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			b := backend{addr: e.Addresses[0], port: *at, pod: n.byIP[e.Addresses[0]]}
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" && n.byName[e.TargetRef.Name] != nil {
				b.pod = n.byName[e.TargetRef.Name]
			}
			backends = append(backends, b)
		}
	}
	if len(backends) == 0 {
		return nil, fmt.Errorf("Service %s has no ready endpoint on port %d: the database is nowhere", svc.Name, port)
	}
	var out *Place
	for _, b := range backends {
		where := fmt.Sprintf("Service %s", svc.Name)
		var reach func(context.Context) (string, func(), error)
		if b.pod != nil {
			where += ", served by pod " + b.pod.Name
			reach = c.forwardTo(b.pod.Name, b.pod.Status.PodIP, int(b.port), inCluster)
		} else {
			addr := net.JoinHostPort(b.addr, strconv.Itoa(int(b.port)))
			where += fmt.Sprintf(", at %s out of the namespace's pods", addr)
			reach = dialDirect(addr)
		}
		place := &Place{Where: where, Reach: reach}
		if b.pod != nil {
			place = n.place(b.pod, where, reach)
		}
		if place.Pod != "" {
			// A pod of the node behind the Service is the finding.
			return place, nil
		}
		if out == nil {
			out = place
		}
	}
	return out, nil
}

// forwardTo reaches a port of a pod: its address ip from inside the
// cluster, a port-forward from outside (which also reaches the pod's own
// loopback).
func (c *Cluster) forwardTo(pod, ip string, port int, inCluster bool) func(context.Context) (string, func(), error) {
	ns := c.Namespace
	if inCluster {
		return dialDirect(net.JoinHostPort(ip, strconv.Itoa(port)))
	}
	return func(ctx context.Context) (string, func(), error) {
		fw, err := c.Forward(ctx, ns, pod, []int32{int32(port)}, nil)
		if err != nil {
			return "", nil, err
		}
		return fw.Addrs[0], fw.Close, nil
	}
}

// ForwardService reaches a port of a Service of namespace ns from
// outside the cluster, as kubectl port-forward svc/NAME does: a
// port-forward to the first ready pod behind that port, or the host of
// an ExternalName Service. The kubeconfig's user needs get on services
// and create on pods/portforward there.
func (c *Cluster) ForwardService(ctx context.Context, ns, name string, port int) (string, func(), error) {
	svc, err := c.Clientset.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", nil, ObjectError("Service", ns, name, "get", err)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(port)), func() {}, nil
	}
	behind, err := BackendsOf(ctx, c.Clientset, svc)
	if err != nil {
		return "", nil, err
	}
	for _, sp := range svc.Spec.Ports {
		if int(sp.Port) != port || len(behind.Ports[sp.Name]) == 0 {
			continue
		}
		at := behind.Ports[sp.Name][0]
		fw, err := c.Forward(ctx, ns, at.Pod, []int32{at.Port}, nil)
		if err != nil {
			return "", nil, err
		}
		return fw.Addrs[0], fw.Close, nil
	}
	return "", nil, poll.Permanent(fmt.Errorf("Service %s of namespace %s: %s", name, ns, behind.NoPodBehind(svc, []string{strconv.Itoa(port)})))
}

// Locate judges where host:port, which pod (of role) connects to, leads:
// the pod itself, another pod of the inventory, or none of them. The
// local environment's pods are processes on the runner's host, so the
// runner dials the address as it is.
func (w filesWorld) Locate(_ context.Context, pod inventory.Endpoint, role, host string, port int) (*Place, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if loopbackHost(host, false) {
		return &Place{Pod: pod.Name, Role: role, Where: "the pod's own loopback", Reach: dialDirect(addr)}, nil
	}
	for _, name := range slices.Sorted(maps.Keys(w.inv.Roles)) {
		for _, p := range w.inv.Roles[name].Pods {
			if host == p.Address || host == p.Name {
				return &Place{Pod: p.Name, Role: name, Where: "pod " + p.Name, Reach: dialDirect(addr)}, nil
			}
		}
	}
	return &Place{Where: fmt.Sprintf("%s, none of the inventory's pods", addr), Reach: dialDirect(addr)}, nil
}

// Locate judges where host:port, which pod (of role) connects to, leads,
// as the pod resolves the host: the pod itself, another pod of the node,
// a Service and what it leads to, or none of the namespace's pods.
func (c *Cluster) Locate(ctx context.Context, pod inventory.Endpoint, role, host string, port int) (*Place, error) {
	// The pod's own resolver decides where the host is: a hostAlias, a
	// search domain or the pod's own name may lead where the name alone
	// does not say. A pod the discovery did not find (no UID) cannot be
	// asked, and is judged by the name alone.
	var resolved []string
	if pod.UID != "" {
		var err error
		if resolved, err = c.Resolve(ctx, pod, host); err != nil {
			return nil, err
		}
	}
	place, err := c.locate(ctx, pod, role, host, port, resolved)
	if err == nil && len(resolved) > 0 {
		place.Notes = append(place.Notes, fmt.Sprintf("pod %s resolves %s to %s", pod.Name, host, strings.Join(resolved, ", ")))
	}
	return place, err
}

func (c *Cluster) locate(ctx context.Context, pod inventory.Endpoint, role, host string, port int, resolved []string) (*Place, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	inCluster, ns := c.inside, c.Namespace
	// The host as written, then as the pod resolves it.
	addrs := append([]string{host}, resolved...)
	if i := slices.IndexFunc(addrs, func(a string) bool { return loopbackHost(a, true) }); i >= 0 {
		at := "the pod's own loopback"
		if i > 0 {
			at = fmt.Sprintf("the pod's own loopback: %s resolves to %s in pod %s", host, addrs[i], pod.Name)
		}
		// Only a port-forward dials the pod's own loopback.
		reach := c.forwardTo(pod.Name, "", port, inCluster)
		if inCluster {
			reach = func(context.Context) (string, func(), error) {
				return "", nil, poll.Permanent(fmt.Errorf("the database at pod %s's own loopback is reached only through a port-forward, which a runner in the cluster does not make", pod.Name))
			}
		}
		return &Place{Pod: pod.Name, Role: role, Where: at, Reach: reach}, nil
	}
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, ObjectError("Pod", ns, "*", "list", err)
	}
	n := &namespacePods{node: c.Node.Name, byName: map[string]*corev1.Pod{}, byIP: map[string]*corev1.Pod{}}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		n.byName[p.Name] = p
		if p.Status.PodIP != "" {
			n.byIP[p.Status.PodIP] = p
		}
	}
	for _, a := range addrs {
		if p := n.byIP[a]; p != nil {
			where := fmt.Sprintf("pod %s", p.Name)
			if a != host {
				where = fmt.Sprintf("pod %s (%s resolves to %s in pod %s)", p.Name, host, a, pod.Name)
			}
			return n.place(p, where, c.forwardTo(p.Name, p.Status.PodIP, port, inCluster)), nil
		}
	}
	name, other, isService := serviceOfHost(host, ns)
	if other != "" {
		reach := func(ctx context.Context) (string, func(), error) {
			if inCluster {
				return addr, func() {}, nil
			}
			return c.ForwardService(ctx, other, name, port)
		}
		return &Place{Where: fmt.Sprintf("a Service of namespace %s, where no pod of the node runs", other), Reach: reach}, nil
	}
	if !isService && net.ParseIP(host) == nil {
		return &Place{Where: fmt.Sprintf("%s, a host out of the cluster", addr), Reach: dialDirect(addr)}, nil
	}
	services, err := c.Clientset.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, ObjectError("Service", ns, "*", "list", err)
	}
	for i := range services.Items {
		svc := &services.Items[i]
		byAddress := svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone && slices.Contains(addrs, svc.Spec.ClusterIP)
		switch {
		case svc.Name == name && svc.Spec.Type == corev1.ServiceTypeExternalName:
			// A name for a host out of the cluster: the database is
			// where that name leads, which the pod resolved above to no
			// pod of the namespace.
			ext := net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(port))
			return &Place{Where: fmt.Sprintf("Service %s, an ExternalName for %s, out of the namespace's pods", svc.Name, svc.Spec.ExternalName), Reach: dialDirect(ext)}, nil
		case svc.Name == name || byAddress:
			return n.behindService(ctx, c, svc, port, inCluster)
		}
	}
	if isService {
		return nil, fmt.Errorf("the URL's host %s names Service %s of namespace %s, which does not exist", host, name, ns)
	}
	return &Place{Where: fmt.Sprintf("%s, no pod's or Service's address in namespace %s", addr, ns), Reach: dialDirect(addr)}, nil
}
