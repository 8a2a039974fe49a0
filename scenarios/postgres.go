package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/internal/loopback"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
)

// The postgres suite: the role keeps its data in a Postgres out of its
// pods, and the companion of lldap keeps exactly one OpenTofu state there
// (SC-003, Known Deviations).
var postgresSuite = &Suite{
	Name: "postgres",
	Doc:  "the role's data is in a Postgres out of the pods, with one OpenTofu state of the companion",
	Scenarios: []*Scenario{
		{
			Name:   "data-outside-pod",
			Spec:   []string{"SC-003"},
			Doc:    "the database URL the role's pods read leads to none of the node's pods, and the database holds the role's users",
			Skip:   needsUsersTable,
			Seeded: seededByStandIn,
			Uses:   databaseUses,
			Steps: Checks(
				Check{Name: "the database is in no pod of the node", Do: databaseOutsidePods},
				Check{Name: "the database holds the role's users", Do: databaseHoldsUsers},
			),
		},
		{
			Name:   "one-opentofu-state",
			Spec:   []string{"SC-003"},
			Doc:    "the schema of the companion holds exactly one OpenTofu state, with the values of its objects",
			Skip:   needsPostgres,
			Seeded: seededByStandIn,
			Uses:   databaseUses,
			Steps:  Checks(Check{Name: "exactly one state in the schema", Do: oneOpenTofuState}),
		},
	},
}

// databaseUses: the role's URL is read in its pods; its host is judged
// against the namespace's pods and Services, and reached through a
// port-forward when a pod serves it (from outside the cluster only).
var databaseUses = []Capability{capExec, capDatabase, capForward}

// seededByStandIn marks the results of a role whose pods run a stand-in:
// the stand-in writes no data, so the rows the scenario reads were
// written by the environment, not by the role (docs/judgement-calls.md).
func seededByStandIn(inv *inventory.Inventory) string {
	if p := inv.Postgres; p != nil {
		if r := inv.Roles[p.Role]; r != nil && r.StandIn != "" {
			return fmt.Sprintf("the pods of role %s run %s in place of its service, which writes no rows: the rows read were seeded by the environment", p.Role, r.StandIn)
		}
	}
	return ""
}

// databaseHoldsUsers finds the contract's user in the role's users table,
// connected as the role is: with the URL and credential of its pod.
func databaseHoldsUsers(ctx context.Context, s *State) error {
	p := s.Inv.Postgres
	user := s.Inv.LDAP.User
	return withDatabase(ctx, s, fmt.Sprintf("the user %s in table %s", user, p.UsersTable), func(ctx context.Context, db *pgx.Conn) error {
		var n int
		q := fmt.Sprintf("SELECT count(*) FROM %s WHERE user_id = $1", pgx.Identifier{p.UsersTable}.Sanitize())
		if err := db.QueryRow(ctx, q, user).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return poll.Saw("%d rows for %s", n, user)
		}
		s.Note("table %s holds %s", p.UsersTable, user)
		return nil
	})
}

func needsPostgres(inv *inventory.Inventory) string {
	if inv.Postgres == nil {
		return "the inventory has no postgres"
	}
	if _, why := databaseSecret(inv); why != "" {
		return why
	}
	w := worldOf(inv)
	for _, p := range inv.Roles[inv.Postgres.Role].Pods {
		if why := w.lacks(p, needsStatusAndSecrets); why != "" {
			return why
		}
	}
	return ""
}

// needsUsersTable says why the role's data cannot be looked for: a
// database that only answers proves nothing of where the role keeps it.
func needsUsersTable(inv *inventory.Inventory) string {
	switch {
	case inv.Postgres == nil:
		return "the inventory has no postgres"
	case inv.Postgres.UsersTable == "":
		return "the inventory names no table of the role's data (postgres.usersTable): a connection alone proves nothing"
	case inv.LDAP == nil:
		return "the inventory has no ldap contract, whose user (ldap.user) the table of the role's data must hold"
	}
	return needsPostgres(inv)
}

// postgresURL starts a Postgres connection URL.
var postgresURL = regexp.MustCompile(`postgres(ql)?://`)

// databaseSecret is the file of the role's secrets that holds its
// database URL: the inventory's postgres.urlSecret, or the role's one
// secret whose template holds a postgres:// URL. why says why there is
// none.
func databaseSecret(inv *inventory.Inventory) (file, why string) {
	p := inv.Postgres
	if p.URLSecret != "" {
		return p.URLSecret, ""
	}
	role := inv.Roles[p.Role]
	if role == nil {
		return "", fmt.Sprintf("postgres.role: %q is no role of the inventory", p.Role)
	}
	var found []string
	for _, f := range slices.Sorted(maps.Keys(role.Secrets)) {
		if t := role.Secrets[f].Template; t != nil && postgresURL.MatchString(*t) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return "", fmt.Sprintf("no secret of role %s has a template with a postgres:// URL: name the secret the role reads its database URL from in postgres.urlSecret", p.Role)
	}
	return "", fmt.Sprintf("secrets %s of role %s each have a template with a postgres:// URL: name the one the role reads its data with in postgres.urlSecret", strings.Join(found, ", "), p.Role)
}

// envName is a variable's name, as an environment file sets it.
var envName = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*$`)

// roleURL reads the database URL that a pod of the role reads: the first
// postgres:// URL of its secret file, bare or as VAR=URL. Its errors never
// quote the file: it holds a password.
func roleURL(ctx context.Context, s *State, pod inventory.Endpoint, file string) (*url.URL, error) {
	data, err := readPodSecret(ctx, s, pod, file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", secretWhere(s, pod, file), err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if name, value, ok := strings.Cut(line, "="); ok && envName.MatchString(name) {
			line = strings.Trim(value, `"'`)
		}
		if !postgresURL.MatchString(line) || strings.Index(line, "postgres") != 0 {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || u.Host == "" {
			return nil, poll.Permanent(fmt.Errorf("%s holds a postgres URL with no host, or one that does not parse", secretWhere(s, pod, file)))
		}
		return u, nil
	}
	return nil, poll.Saw("%s holds no postgres:// URL", secretWhere(s, pod, file))
}

// urlPort is the port of a Postgres URL: its own, or Postgres' 5432.
func urlPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	return 5432
}

// databasePlace is where a role's database is, as the runner finds it
// from a pod's URL.
type databasePlace struct {
	// pod is the pod of the node that serves the database, and role its
	// role; empty when none does.
	pod, role string
	// where says where the database is, for the report.
	where string
	// reach gives the address the runner connects to, and what stops a
	// port-forward it opened.
	reach func(ctx context.Context) (addr string, stop func(), err error)
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

// locateDatabase judges where the URL that pod (of role) reads leads: the
// pod itself, another pod of the node, or none of the namespace's pods.
func locateDatabase(ctx context.Context, s *State, pod inventory.Endpoint, role string, u *url.URL) (*databasePlace, error) {
	host, port := u.Hostname(), urlPort(u)
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if s.Inv.Cluster == nil {
		if loopbackHost(host, false) {
			return &databasePlace{pod: pod.Name, role: role, where: "the pod's own loopback", reach: dialDirect(addr)}, nil
		}
		for _, name := range slices.Sorted(maps.Keys(s.Inv.Roles)) {
			for _, p := range s.Inv.Roles[name].Pods {
				if host == p.Address || host == p.Name {
					return &databasePlace{pod: p.Name, role: name, where: "pod " + p.Name, reach: dialDirect(addr)}, nil
				}
			}
		}
		return &databasePlace{where: fmt.Sprintf("%s, none of the inventory's pods", addr), reach: dialDirect(addr)}, nil
	}
	c, err := stateCluster(s)
	if err != nil {
		return nil, err
	}
	inCluster := s.Inv.Cluster.Kubeconfig == ""
	ns := s.Inv.Cluster.Namespace
	// The pod's own resolver decides where the host is: a hostAlias, a
	// search domain or the pod's own name may lead where the name alone
	// does not say.
	resolved, err := s.world().resolve(ctx, pod, host)
	if err != nil {
		return nil, err
	}
	if len(resolved) > 0 {
		s.Note("pod %s resolves %s to %s", pod.Name, host, strings.Join(resolved, ", "))
	}
	// The host as written, then as the pod resolves it.
	addrs := append([]string{host}, resolved...)
	if i := slices.IndexFunc(addrs, func(a string) bool { return loopbackHost(a, true) }); i >= 0 {
		at := "the pod's own loopback"
		if i > 0 {
			at = fmt.Sprintf("the pod's own loopback: %s resolves to %s in pod %s", host, addrs[i], pod.Name)
		}
		// Only a port-forward dials the pod's own loopback.
		reach := forwardTo(c, s, pod.Name, "", port, inCluster)
		if inCluster {
			reach = func(context.Context) (string, func(), error) {
				return "", nil, poll.Permanent(fmt.Errorf("the database at pod %s's own loopback is reached only through a port-forward, which a runner in the cluster does not make", pod.Name))
			}
		}
		return &databasePlace{pod: pod.Name, role: role, where: at, reach: reach}, nil
	}
	pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, discoverError("Pod", ns, "*", "list", err)
	}
	n := &namespacePods{node: s.Inv.Node, byName: map[string]*corev1.Pod{}, byIP: map[string]*corev1.Pod{}}
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
			return n.place(p, where, forwardTo(c, s, p.Name, p.Status.PodIP, port, inCluster)), nil
		}
	}
	name, other, isService := serviceOfHost(host, ns)
	if other != "" {
		reach := func(context.Context) (string, func(), error) {
			if inCluster {
				return addr, func() {}, nil
			}
			return "", nil, poll.Permanent(fmt.Errorf("%s is a Service of namespace %s: the runner, outside the cluster, forwards ports in namespace %s only", host, other, ns))
		}
		return &databasePlace{where: fmt.Sprintf("a Service of namespace %s, where no pod of the node runs", other), reach: reach}, nil
	}
	if !isService && net.ParseIP(host) == nil {
		return &databasePlace{where: fmt.Sprintf("%s, a host out of the cluster", addr), reach: dialDirect(addr)}, nil
	}
	services, err := c.Clientset.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, discoverError("Service", ns, "*", "list", err)
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
			return &databasePlace{where: fmt.Sprintf("Service %s, an ExternalName for %s, out of the namespace's pods", svc.Name, svc.Spec.ExternalName), reach: dialDirect(ext)}, nil
		case svc.Name == name || byAddress:
			return n.behindService(ctx, c, s, svc, port, inCluster)
		}
	}
	if isService {
		return nil, fmt.Errorf("the URL's host %s names Service %s of namespace %s, which does not exist", host, name, ns)
	}
	return &databasePlace{where: fmt.Sprintf("%s, no pod's or Service's address in namespace %s", addr, ns), reach: dialDirect(addr)}, nil
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
func (n *namespacePods) place(p *corev1.Pod, where string, reach func(context.Context) (string, func(), error)) *databasePlace {
	if p.Labels[plan.LabelNode] == n.node {
		return &databasePlace{pod: p.Name, role: p.Labels[plan.LabelRole], where: where, reach: reach}
	}
	return &databasePlace{where: where + ", a pod of the namespace that is none of the node's", reach: reach}
}

// behindService is the database behind a Service: the ready endpoints of
// the Service's port that the URL's port names, each a pod of the
// namespace or an address out of them (a Service without selector).
func (n *namespacePods) behindService(ctx context.Context, c *clusterView, s *State, svc *corev1.Service, port int, inCluster bool) (*databasePlace, error) {
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
		return nil, discoverError("EndpointSlice", svc.Namespace, svc.Name+"-*", "list", err)
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
	var out *databasePlace
	for _, b := range backends {
		where := fmt.Sprintf("Service %s", svc.Name)
		var reach func(context.Context) (string, func(), error)
		if b.pod != nil {
			where += ", served by pod " + b.pod.Name
			reach = forwardTo(c, s, b.pod.Name, b.pod.Status.PodIP, int(b.port), inCluster)
		} else {
			addr := net.JoinHostPort(b.addr, strconv.Itoa(int(b.port)))
			where += fmt.Sprintf(", at %s out of the namespace's pods", addr)
			reach = dialDirect(addr)
		}
		place := &databasePlace{where: where, reach: reach}
		if b.pod != nil {
			place = n.place(b.pod, where, reach)
		}
		if place.pod != "" {
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
func forwardTo(c *clusterView, s *State, pod, ip string, port int, inCluster bool) func(context.Context) (string, func(), error) {
	ns := s.Inv.Cluster.Namespace
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

func databaseOutsidePods(ctx context.Context, s *State) error {
	role := s.Inv.Postgres.Role
	// With no pod to compare, the database could be in any of them.
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return err
	}
	file, why := databaseSecret(s.Inv)
	if why != "" {
		return poll.Permanent(errors.New(why))
	}
	for _, pod := range pods {
		u, err := roleURL(ctx, s, pod, file)
		if err != nil {
			return err
		}
		place, err := locateDatabase(ctx, s, pod, role, u)
		if err != nil {
			return err
		}
		if place.pod != "" {
			return poll.Permanent(fmt.Errorf("pod %s reads its database (secret %s) at %s, in pod %s of role %s (%s): its data would go with the pod", pod.Name, file, u.Host, place.pod, place.role, place.where))
		}
		s.Note("pod %s of role %s reads its database (secret %s) at %s: %s", pod.Name, role, file, u.Host, place.where)
	}
	return nil
}

// withDatabase connects as the role does, with the URL of its first pod,
// and waits until check passes.
func withDatabase(ctx context.Context, s *State, expect string, check func(context.Context, *pgx.Conn) error) error {
	db, err := roleDatabase(s)
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: db.what, Expect: expect, Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		// Connected each time: a rotation gives the role a new credential.
		conn, done, err := db.connect(ctx, s, nil)
		if err != nil {
			return err
		}
		defer done()
		return check(ctx, conn)
	})
}

// roleDB is the database of the inventory's postgres.role, as its first
// pod reads it.
type roleDB struct {
	role, file string
	pod        inventory.Endpoint
	// what names it in probes.
	what string
}

func roleDatabase(s *State) (*roleDB, error) {
	if s.Inv.Postgres == nil {
		return nil, poll.Permanent(errors.New("the inventory has no postgres"))
	}
	role := s.Inv.Postgres.Role
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return nil, err
	}
	file, why := databaseSecret(s.Inv)
	if why != "" {
		return nil, poll.Permanent(errors.New(why))
	}
	return &roleDB{role: role, file: file, pod: pods[0], what: fmt.Sprintf("the database of pod %s (secret %s)", pods[0].Name, file)}, nil
}

// errConnect marks a connection that the database refused, or that did
// not reach it, from an error in finding it.
var errConnect = errors.New("connect")

// connect reads the pod's URL, finds and reaches its host, and connects
// with the URL's credential, or with the one user gives (a credential
// read elsewhere: user and password). done closes the connection, then
// the port-forward it went through.
func (db *roleDB) connect(ctx context.Context, s *State, user *url.Userinfo) (conn *pgx.Conn, done func(), err error) {
	u, err := roleURL(ctx, s, db.pod, db.file)
	if err != nil {
		return nil, nil, err
	}
	place, err := locateDatabase(ctx, s, db.pod, db.role, u)
	if err != nil {
		return nil, nil, err
	}
	addr, stop, err := place.reach(ctx)
	if err != nil {
		return nil, nil, err
	}
	if user != nil {
		u.User = user
	}
	cfg, err := connectConfig(u, addr)
	if err != nil {
		stop()
		return nil, nil, poll.Permanent(fmt.Errorf("%s: %w", secretWhere(s, db.pod, db.file), err))
	}
	conn, err = pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w to %s as %s, through %s: %w", errConnect, u.Redacted(), u.User.Username(), addr, err)
	}
	return conn, func() { conn.Close(context.WithoutCancel(ctx)); stop() }, nil
}

// readDSN reads a connection string from its file. Its errors never quote
// it: it holds a password.
func readDSN(file string) (*url.URL, string, error) {
	raw, err := inventory.ReadSecret(file)
	if err != nil {
		return nil, "", poll.Permanent(err)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, "", poll.Permanent(fmt.Errorf("%s holds no postgres:// URL", file))
	}
	return u, raw, nil
}

// connectConfig is the role's URL, connected at addr (a port-forward, a
// Service's endpoint): its user, password, database and TLS settings
// stay, and TLS still verifies the URL's host.
func connectConfig(u *url.URL, addr string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, errors.New("the URL is no Postgres URL pgx reads")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	cfg.Host, cfg.Port = host, uint16(p)
	for _, fb := range cfg.Fallbacks {
		fb.Host, fb.Port = host, uint16(p)
	}
	return cfg, nil
}

func oneOpenTofuState(ctx context.Context, s *State) error {
	schema := s.Inv.Postgres.Schema
	if schema == "" {
		schema = "lldap_provision"
	}
	table := pgx.Identifier{schema, "states"}.Sanitize()
	return withDatabase(ctx, s, "exactly one OpenTofu state in "+table, func(ctx context.Context, db *pgx.Conn) error {
		rows, err := db.Query(ctx, "SELECT name, data FROM "+table+" ORDER BY name")
		if err != nil {
			return err
		}
		type state struct{ name, data string }
		states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (state, error) {
			var st state
			err := row.Scan(&st.name, &st.data)
			return st, err
		})
		if err != nil {
			return err
		}
		if len(states) != 1 {
			var names []string
			for _, st := range states {
				names = append(names, st.name)
			}
			return poll.Saw("%d states (%s)", len(states), strings.Join(names, ", "))
		}
		var tf struct {
			Version   int    `json:"version"`
			Lineage   string `json:"lineage"`
			Resources []struct {
				Type string `json:"type"`
			} `json:"resources"`
		}
		if err := json.Unmarshal([]byte(states[0].data), &tf); err != nil || tf.Version == 0 || tf.Lineage == "" {
			return poll.Saw("state %q that is no OpenTofu state (%v)", states[0].name, err)
		}
		s.Note("one state %q: version %d, lineage %s, %d resources", states[0].name, tf.Version, tf.Lineage, len(tf.Resources))
		return nil
	})
}
