package vmtests

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
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
func (e *Env) podPorts() map[string]int {
	ports := map[string]int{"ldap": PortLDAP, "ldaps": PortLDAPS}
	if e.servesLLDAP() {
		ports["http"] = PortLLDAPHTTP
	}
	return ports
}

// servicePorts are the ports of the role's Service: the pods' but the
// plain LDAP port, unless a test puts it there too.
func (e *Env) servicePorts() map[string]int {
	ports := e.podPorts()
	if !e.PlainPortOnService {
		delete(ports, "ldap")
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
func (e *Env) lldapFrontends(bind string, pods []string) string {
	var b strings.Builder
	for _, port := range slices.Sorted(maps.Values(e.servicePorts())) {
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
func (e *Env) startService(ctx context.Context) error {
	var pods []string
	for i := range replicas {
		pods = append(pods, e.reach(e.directoryPod(i), e.podAddress(i)))
	}
	config := haproxyDefaults + e.lldapFrontends(e.listen(e.serviceAddress()), pods)
	publish := publishOn(e.servicePorts(), e.serviceAddress())
	return e.startHAProxy(ctx, "haproxy", config, publish, net.JoinHostPort(e.serviceAddress(), fmt.Sprint(PortLDAPS)))
}

// startAutheliaService starts HAProxy as the authelia role's Service, once
// authelia runs (a container gets its address only then).
func (e *Env) startAutheliaService(ctx context.Context) error {
	config := haproxyDefaults + autheliaFrontend(e.listen(e.autheliaServiceAddress()), e.reach("authelia", e.autheliaPodAddress()))
	return e.startHAProxy(ctx, "haproxy-authelia", config, map[int]string{PortAuthelia: e.autheliaServiceAddress()}, net.JoinHostPort(e.autheliaServiceAddress(), fmt.Sprint(PortAuthelia)))
}

// startHAProxy starts HAProxy with config as name, and waits until ready
// answers TLS.
func (e *Env) startHAProxy(ctx context.Context, name, config string, publish map[int]string, ready string) error {
	conf := filepath.Join(e.Dir, name+".cfg")
	if err := writeFile(conf, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := e.launch(ctx, name, []string{e.tools.haproxy, "-db", "-f", conf}, startOptions{
		dir: e.Dir, detached: e.Detached, publish: publish, image: e.Images.HAProxy,
		before: [][]string{{e.tools.haproxy, "-c", "-q", "-f", conf}},
	})
	if err != nil {
		return err
	}
	return e.waitTLS(ctx, p, ready)
}
