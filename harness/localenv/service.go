package localenv

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fediversity/podroles/harness/ready"
)

// The roles' Services are HAProxy: TCP through to the pods, round robin,
// TLS passed through untouched.

const haproxyDefaults = `global
  maxconn 256

defaults
  mode tcp
  timeout connect 2s
  timeout client 60s
  timeout server 60s
`

// podPorts are the ports of the lldap role's pods by name: LDAP and
// LDAPS, and lldap's HTTP where lldap serves.
func (d *directory) podPorts() map[string]int {
	ports := map[string]int{"ldap": PortLDAP, "ldaps": PortLDAPS}
	if d.site.servesLLDAP() {
		ports["http"] = PortLLDAPHTTP
	}
	return ports
}

// servicePorts are the ports the role's Service declares: the pods' but
// the plain LDAP port.
func (d *directory) servicePorts() map[string]int {
	ports := d.podPorts()
	delete(ports, "ldap")
	return ports
}

// servedPorts are the ports the role's Service answers on: those it
// declares, and the plain LDAP port where a test breaks it so. Only a
// dial finds that port, which the inventory does not list.
func (d *directory) servedPorts() map[string]int {
	ports := d.servicePorts()
	if d.site.Faults.PlainPortOnService {
		ports["ldap"] = PortLDAP
	}
	return ports
}

// publishOn publishes each of ports on addr.
func publishOn(ports map[string]int, addr string) map[int]string {
	publish := make(map[int]string, len(ports))
	for _, port := range ports {
		publish[port] = addr
	}
	return publish
}

// lldapFrontends is the lldap role's Service, bound on bind with its
// ports, in front of the replicas at pods.
func (d *directory) frontends(bind string, pods []string) string {
	var b strings.Builder
	for _, port := range slices.Sorted(maps.Values(d.servedPorts())) {
		fmt.Fprintf(&b, "\nfrontend service-%d\n  bind %s:%d\n  default_backend pods-%d\n", port, bind, port, port)
		fmt.Fprintf(&b, "\nbackend pods-%d\n  balance roundrobin\n", port)
		for i, pod := range pods {
			fmt.Fprintf(&b, "  server pod%d %s:%d check inter 500ms fall 2 rise 1\n", i, pod, port)
		}
	}
	return b.String()
}

// autheliaFrontend is the authelia role's Service, bound on bind, in front
// of its pod at pod.
func autheliaFrontend(bind, pod string) string {
	return fmt.Sprintf("\nfrontend authelia-%[1]d\n  bind %[2]s:%[1]d\n  default_backend authelia-pods\n\nbackend authelia-pods\n  server pod0 %[3]s:%[1]d\n", PortAuthelia, bind, pod)
}

// startService starts HAProxy as the lldap role's Service.
func (d *directory) startService(ctx context.Context) error {
	s := d.site
	var pods []string
	for i := range replicas {
		pods = append(pods, s.reach(s.directoryPod(i), s.podAddress(i)))
	}
	config := haproxyDefaults + d.frontends(s.listen(s.serviceAddress()), pods)
	publish := publishOn(d.servedPorts(), s.serviceAddress())
	return startHAProxy(ctx, s, "haproxy", config, publish, net.JoinHostPort(s.serviceAddress(), fmt.Sprint(PortLDAPS)))
}

// startHAProxy starts HAProxy with config as name, and waits until addr
// answers TLS.
func startHAProxy(ctx context.Context, s *site, name, config string, publish map[int]string, addr string) error {
	conf := filepath.Join(s.Dir, name+".cfg")
	if err := writeFile(conf, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := s.launch(ctx, name, []string{s.tools.haproxy, "-db", "-f", conf}, launchOptions{
		dir: s.Dir, publish: publish, image: s.Images.HAProxy,
		before: [][]string{{s.tools.haproxy, "-c", "-q", "-f", conf}},
	})
	if err != nil {
		return err
	}
	return ready.TLS(ctx, p, addr)
}
