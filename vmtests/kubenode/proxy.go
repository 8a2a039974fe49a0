package kubenode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The node's service proxy stands in for kube-proxy, whose every mode
// writes packet filter rules on the host, which the tests must not touch
// on a shared machine: it puts each Service's cluster IP on NodeBridge,
// listens on its TCP ports there, and passes each connection to a ready
// endpoint of the Service (from its EndpointSlices), round robin. Pods
// reach it through their route to Range; the host reaches it directly.

// RunServiceProxy serves the cluster's Services until ctx ends, polling
// the API server twice a second. What goes wrong with a connection is a
// line on log.
func RunServiceProxy(ctx context.Context, client kubernetes.Interface, log io.Writer) error {
	subnet := netip.MustParsePrefix(ServiceSubnet)
	p := &serviceProxy{log: log, ports: map[string]*servicePort{}, addresses: map[string]bool{}}
	defer p.closeAll()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.sync(ctx, client, subnet); err != nil && ctx.Err() == nil {
			fmt.Fprintf(log, "service proxy: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

type serviceProxy struct {
	log       io.Writer
	ports     map[string]*servicePort // by "ip:port"
	addresses map[string]bool         // cluster IPs put on NodeBridge
}

// servicePort is one TCP port of a Service, listening on its cluster IP.
type servicePort struct {
	name     string // namespace/service:port, for the log
	listener net.Listener
	backends atomic.Pointer[[]string]
	next     atomic.Uint64
}

func (p *serviceProxy) sync(ctx context.Context, client kubernetes.Interface, subnet netip.Prefix) error {
	services, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	endpointSlices, err := client.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	want := map[string][]string{}
	names := map[string]string{}
	for _, svc := range services.Items {
		ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
		if err != nil || !subnet.Contains(ip) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			if sp.Protocol != corev1.ProtocolTCP {
				continue
			}
			key := net.JoinHostPort(ip.String(), strconv.Itoa(int(sp.Port)))
			want[key] = readyEndpoints(endpointSlices.Items, svc, sp)
			names[key] = fmt.Sprintf("%s/%s:%d", svc.Namespace, svc.Name, sp.Port)
		}
	}
	for key, sp := range p.ports {
		if _, ok := want[key]; !ok {
			sp.close()
			delete(p.ports, key)
		}
	}
	ips := map[string]bool{}
	for key, backends := range want {
		host, _, _ := net.SplitHostPort(key)
		ips[host] = true
		if !p.addresses[host] {
			if err := ip("addr", "replace", host+"/32", "dev", NodeBridge); err != nil {
				return err
			}
			p.addresses[host] = true
		}
		sp := p.ports[key]
		if sp == nil {
			l, err := net.Listen("tcp", key)
			if err != nil {
				return fmt.Errorf("listen for Service %s: %w", names[key], err)
			}
			sp = &servicePort{name: names[key], listener: l}
			p.ports[key] = sp
			go sp.serve(p.log)
		}
		sp.backends.Store(&backends)
	}
	for host := range p.addresses {
		if !ips[host] {
			ip("addr", "del", host+"/32", "dev", NodeBridge)
			delete(p.addresses, host)
		}
	}
	return nil
}

// readyEndpoints are the addresses of a Service port's ready endpoints.
func readyEndpoints(all []discoveryv1.EndpointSlice, svc corev1.Service, sp corev1.ServicePort) []string {
	var out []string
	for _, es := range all {
		if es.Namespace != svc.Namespace || es.Labels[discoveryv1.LabelServiceName] != svc.Name {
			continue
		}
		for _, port := range es.Ports {
			if port.Port == nil || (port.Name != nil && *port.Name != sp.Name) {
				continue
			}
			for _, ep := range es.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, a := range ep.Addresses {
					out = append(out, net.JoinHostPort(a, strconv.Itoa(int(*port.Port))))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func (sp *servicePort) serve(log io.Writer) {
	for {
		conn, err := sp.listener.Accept()
		if err != nil {
			return // closed
		}
		go sp.pass(conn, log)
	}
}

// pass hands a connection to the next ready endpoint that answers.
func (sp *servicePort) pass(conn net.Conn, log io.Writer) {
	defer conn.Close()
	backends := *sp.backends.Load()
	if len(backends) == 0 {
		fmt.Fprintf(log, "service proxy: %s has no ready endpoint\n", sp.name)
		return
	}
	var errs []string
	start := sp.next.Add(1)
	for i := range backends {
		to := backends[(int(start)+i)%len(backends)]
		up, err := net.DialTimeout("tcp", to, 2*time.Second)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		defer up.Close()
		done := make(chan struct{}, 2)
		go func() { io.Copy(up, conn); closeWrite(up); done <- struct{}{} }()
		go func() { io.Copy(conn, up); closeWrite(conn); done <- struct{}{} }()
		<-done
		<-done
		return
	}
	fmt.Fprintf(log, "service proxy: %s: no endpoint answers: %s\n", sp.name, strings.Join(errs, "; "))
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func (sp *servicePort) close() { sp.listener.Close() }

func (p *serviceProxy) closeAll() {
	for _, sp := range p.ports {
		sp.close()
	}
	for host := range p.addresses {
		ip("addr", "del", host+"/32", "dev", NodeBridge)
	}
}
