package vmtests

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
)

// haproxyConfig is the role's Service, bound on bind: TCP through to the
// replicas at pods, round robin, TLS passed through untouched, with only
// the LDAPS port (unless a test puts the plain port on it too).
func (e *Env) haproxyConfig(bind string, pods []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 256

defaults
  mode tcp
  timeout connect 2s
  timeout client 60s
  timeout server 60s
`)
	ports := []int{PortLDAPS}
	if e.PlainPortOnService {
		ports = append(ports, PortLDAP)
	}
	for _, port := range ports {
		fmt.Fprintf(&b, "\nfrontend service-%d\n  bind %s:%d\n  default_backend pods-%d\n", port, bind, port, port)
		fmt.Fprintf(&b, "\nbackend pods-%d\n  balance roundrobin\n", port)
		for i, pod := range pods {
			fmt.Fprintf(&b, "  server pod%d %s:%d check inter 500ms fall 2 rise 1\n", i, pod, port)
		}
	}
	if e.tools.vault != "" && e.Provider == ProviderProcesses {
		fmt.Fprintf(&b, "\nfrontend authelia-%d\n  bind %s:%d\n  default_backend authelia-pods\n", PortAuthelia, e.autheliaServiceAddress(), PortAuthelia)
		fmt.Fprintf(&b, "\nbackend authelia-pods\n  server pod0 %s:%d\n", e.autheliaPodAddress(), PortAuthelia)
	}
	return b.String()
}

// startService starts HAProxy in front of the replicas.
func (e *Env) startService(ctx context.Context) error {
	conf := filepath.Join(e.Dir, "haproxy.cfg")
	var pods []string
	for i := range replicas {
		pods = append(pods, e.podAddress(i))
	}
	if err := writeFile(conf, []byte(e.haproxyConfig(e.serviceAddress(), pods)), 0o644); err != nil {
		return err
	}
	if out, err := runQuiet(ctx, e.tools.haproxy, "-c", "-f", conf); err != nil {
		return fmt.Errorf("haproxy -c: %v: %s", err, out)
	}
	p, err := e.start(ctx, "haproxy", []string{e.tools.haproxy, "-db", "-f", conf}, startOptions{dir: e.Dir, detached: e.Detached})
	if err != nil {
		return err
	}
	return e.waitTLS(ctx, p, net.JoinHostPort(e.serviceAddress(), fmt.Sprint(PortLDAPS)))
}
