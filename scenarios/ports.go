package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios/world"
)

// reachPort is a connection to a port, and for a metrics port a GET of
// its path: what a reader in the main pod, or a scraper, does.
type reachPort struct {
	Addr string `json:"addr"`
	// HTTPPath, when set, is GET over the connection; any status but
	// 2xx is an answer that differs.
	HTTPPath string `json:"httpPath,omitempty"`
}

// reachTimeout bounds a connection's setup and an HTTP answer; a port
// that takes longer is no answer, retried (poll.NoAnswer).
const reachTimeout = 10 * time.Second

// quietRead is how long a connection with nothing sent must stay open to
// count as served: a port-forward accepts at loopback whatever the pod
// does, and closes at once where nothing serves the port behind it.
const quietRead = time.Second

// do connects, and GETs the path, and says what answered.
func (r *reachPort) do(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if r.HTTPPath != "" {
		// No connection is kept: a probe lives for the pod's life.
		client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext, DisableKeepAlives: true}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Addr+r.HTTPPath, nil)
		if err != nil {
			return "", poll.Permanent(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", reachError(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode/100 != 2 {
			return "", poll.Saw("GET %s answered %s", r.HTTPPath, resp.Status)
		}
		return fmt.Sprintf("GET %s: %s, %d bytes", r.HTTPPath, resp.Status, n), nil
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", r.Addr)
	if err != nil {
		return "", reachError(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(quietRead))
	if _, err := conn.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return "", poll.Saw("the connection was closed at once (%v): nothing serves the port", err)
	}
	return "connected", nil
}

// reachError keeps a timeout as no answer; a refusal is an answer.
func reachError(err error) error {
	if poll.IsNoAnswer(err) {
		return poll.NoAnswer(err)
	}
	return poll.Saw("%v", err)
}

// portsFromMainPod reaches every port of every role's Service from the
// main pod, by the Service's name, as the node's readers do (through a
// probe; from the runner with --from-runner), GETs the metrics path on
// the metrics port, and compares the Service's scrape annotations with
// the node's metrics.
func portsFromMainPod(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	ask, from, done, err := portAsker(ctx, s)
	if err != nil {
		return err
	}
	defer done()
	var errs []error
	for _, want := range c.Plan.Services {
		role := want.Labels[names.LabelRole]
		got, err := c.Clientset.CoreV1().Services(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, world.ObjectError("Service", want.Namespace, want.Name, "get", err))
			continue
		}
		errs = append(errs, scrapeAnnotations(want, got))
		for _, sp := range got.Spec.Ports {
			errs = append(errs, reachServicePort(ctx, s, c, ask, from, role, got, sp))
		}
	}
	return joinErrors(errs)
}

// scrapeAnnotations compares the Service's prometheus.io annotations
// with the plan's, which the node's metrics make.
func scrapeAnnotations(want, got *corev1.Service) error {
	var wrong []string
	for _, k := range slices.Sorted(maps.Keys(want.Annotations)) {
		if g, ok := got.Annotations[k]; !ok || g != want.Annotations[k] {
			wrong = append(wrong, fmt.Sprintf("%s is %q, the node's metrics give %q", k, g, want.Annotations[k]))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("the Service %s: %s", got.Name, strings.Join(wrong, "; "))
	}
	return nil
}

// reachServicePort reaches one port of a Service. A UDP port is not tried
// (a datagram has no answer to wait for); a stand-in serves only the
// contract's LDAP ports, the others are noted.
func reachServicePort(ctx context.Context, s *State, c *world.Cluster, ask func(context.Context, reachPort) (string, error), from, role string, svc *corev1.Service, sp corev1.ServicePort) error {
	r := s.Inv.Roles[role]
	switch {
	case sp.Protocol == corev1.ProtocolUDP:
		s.Note("Service %s: port %d/UDP not tried", svc.Name, sp.Port)
		return nil
	case r != nil && r.StandIn != "" && !(s.Inv.LDAP != nil && s.Inv.LDAP.Role == role && int(sp.Port) == s.Inv.LDAP.Port):
		// A stand-in serves the ldap contract's port alone, if any.
		s.Note("Service %s: port %d not tried, as the pods run %s in place of the role's service", svc.Name, sp.Port, r.StandIn)
		return nil
	}
	q := reachPort{}
	if m := c.Node.PodRoles.Roles[role].Metrics; m != nil && m.Port == int(sp.Port) {
		q.HTTPPath = m.Path
	}
	var where string
	if from == fromTheRunner {
		// The port as the world reaches it from the runner.
		if r == nil || r.Service == nil {
			return fmt.Errorf("the inventory has no Service of role %s", role)
		}
		addr, err := world.Addr(*r.Service, int(sp.Port))
		if err != nil {
			return err
		}
		q.Addr, where = addr, addr+" (Service "+svc.Name+" of role "+role+")"
		if r.Service.Forwarded != nil {
			if q.HTTPPath == "" {
				return inconclusive("%s: from outside the cluster the port is reached through a port-forward, which accepts a connection whatever the pod does: a connection held shows nothing (run from the main pod, or in the cluster)", where)
			}
			// A forward of its own: a refused connection may end a
			// forward, which other scenarios share.
			ask = func(ctx context.Context, q reachPort) (string, error) {
				addr, stop, err := c.ForwardService(ctx, svc.Namespace, svc.Name, int(sp.Port))
				if err != nil {
					return "", err
				}
				defer stop()
				q.Addr = addr
				return q.do(ctx)
			}
		}
	} else {
		q.Addr = net.JoinHostPort(fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace), strconv.Itoa(int(sp.Port)))
		where = q.Addr + " (Service " + svc.Name + " of role " + role + ")"
	}
	probe := poll.Probe{Endpoint: where, Expect: "a connection " + from + reachExpect(q), Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		found, err := ask(ctx, q)
		if err == nil {
			s.Note("%s %s: %s", where, from, found)
		}
		return err
	})
}

func reachExpect(q reachPort) string {
	if q.HTTPPath != "" {
		return ", and GET " + q.HTTPPath + " answered 2xx"
	}
	return " that stays open"
}

// fromTheRunner is where ports are reached from with --from-runner, or
// where the pods share the runner's network.
const fromTheRunner = "from the runner"

// portAsker is how ports are reached: through the main pod's probe, or
// from the runner (--from-runner). from says so for the report.
func portAsker(ctx context.Context, s *State) (ask func(context.Context, reachPort) (string, error), from string, done func(), err error) {
	local := func(ctx context.Context, q reachPort) (string, error) { return q.do(ctx) }
	if s.fromRunner {
		return local, fromTheRunner, func() {}, nil
	}
	main, err := mainPod(s.Inv)
	if err != nil {
		return nil, "", nil, err
	}
	p, err := addProbe(ctx, s, main)
	if err != nil {
		return nil, "", nil, err
	}
	if p == nil {
		return local, fromTheRunner, func() {}, nil
	}
	asked := probeBase()
	return func(ctx context.Context, q reachPort) (string, error) {
		asked++
		return askProbe(ctx, p, probeQuestion{ID: asked, Reach: &q})
	}, fmt.Sprintf("from the main pod %s (probe %s)", main.Name, p.Name), p.Close, nil
}
