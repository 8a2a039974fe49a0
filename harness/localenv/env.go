// Package localenv starts the local environment that the scenario suites
// run in: real servers on loopback addresses standing for a node's role
// pods. Two OpenLDAP slapd replicas are the pods of the lldap role (or
// lldap's own image, where the containers provider has it), HAProxy is the
// role's Service, passing TLS through, and PostgreSQL the database out of
// the pods; where make servers built them, Vault serves OpenBao's API with
// an agent per pod, authelia is a role of its own and nginx the main pod's
// portal. It writes the inventory that the suites read, and nothing else
// of it reaches them.
//
// Each part of the environment is a type of its own that keeps its state
// (postgres, openBao, directory, authelia, portal), beside the site they
// share: the options, the addresses, the programs, the passwords and the
// provider that runs the servers, as local processes (a procgroup.Group)
// or as containers (a containers.Group). Every server is stopped by its
// PID or through the engine: Down stops them, and `podroles env down`
// stops those of an earlier `env up`.
package localenv

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/plan"
)

// Options of a local environment.
type Options struct {
	// Dir holds everything: configs, data, logs, secrets, the inventory.
	Dir string
	// Loopback is the first three octets of the addresses, "127.0.1" by
	// default: pods at .1 and .2, the Service at .10, Postgres at .20.
	Loopback string
	// Node and Namespace name the node and the namespace of its Service.
	Node, Namespace string
	// Detached servers outlive the process that started them.
	Detached bool
	// CertNames overrides the names the server certificate is for (a
	// test breaks verification on purpose with another name); the
	// portal, whose authelia would refuse the directory, is not started.
	CertNames []string
	// PlainPortOnService has the Service answer on the plain LDAP port
	// too, which it does not declare (a test breaks the environment on
	// purpose).
	PlainPortOnService bool
	// PortalTrustsOtherCA points nginx's proxy_ssl_trusted_certificate at
	// a CA that did not sign authelia's certificate (a test, on purpose).
	PortalTrustsOtherCA bool
	// The options below break the environment on purpose, one thing each,
	// for the tests that see the scenario that guards it fail.
	//
	// NoRestartOn runs the pods of these roles ("lldap"), or a role's
	// pods without watching one secret ("lldap/tls.pem"), without
	// restarting the service when a secret with restart changes (US1-13).
	NoRestartOn []string
	// RestartOnEverySecret restarts a pod's service when any secret file
	// changes, those without restart too (US1-13).
	RestartOnEverySecret bool
	// RestartWithSidecar restarts a pod's service whenever its sidecar
	// restarts, whether a secret changed or not (US1-13).
	RestartWithSidecar bool
	// ServiceBeforeSecrets starts the worker role's service before its
	// sidecar has written its secrets, with nothing to restart it when
	// they come (US1-7).
	ServiceBeforeSecrets bool
	// PostgresInPod runs PostgreSQL at the address of the lldap role's
	// first pod, as a database inside the role's pod (SC-003).
	PostgresInPod bool
	// ExpiredCertificate gives the lldap role's Service an expired
	// certificate, of a CA made in Go that the contract's CA file holds.
	ExpiredCertificate bool
	// AutheliaStaticCredential gives authelia a Postgres credential that
	// never expires, from a KV entry, instead of the database engine's
	// (SC-005).
	AutheliaStaticCredential bool
	// Podroles is the podroles binary, whose hidden pod command
	// supervises the pods of roles with secrets; found or built when
	// empty.
	Podroles string
	// Provider runs the pods as local processes (the default) or as
	// containers; Images are the containers' images (ImagesFromEnv when
	// empty).
	Provider Provider
	Images   Images
	// Cluster deploys this node's plan (podroles plan) as real pods, on
	// the machine's real node (harness/kubenode) with a control plane of
	// its own (processes provider only): see realpods.go. Its suites run
	// through ClusterInventory.
	Cluster *facts.Node
	// NodeWait is how long to wait for the machine's node, which another
	// run may hold.
	NodeWait time.Duration
	// Progress receives a line per step of Up, with its duration; nil
	// drops them.
	Progress io.Writer
}

// Ports of the lldap role, as lldap uses them.
const (
	PortLDAP  = 3890
	PortLDAPS = 6360
)

// Env is a running local environment.
type Env struct {
	Options
	// Inventory is the path of the inventory it wrote.
	Inventory string

	site      *site
	postgres  *postgres
	openbao   *openBao // nil without the OpenBao API
	directory *directory
	authelia  *authelia
	portal    *portal
	worker    *worker
	// cluster is the control plane that Cluster started, if any; node
	// its real node, clusterPlan the plan it runs, and clusterPortal the
	// portal in front of its authelia.
	cluster       *controlplane.ControlPlane
	node          *kubenode.Node
	clusterPlan   *plan.Plan
	clusterPortal *portal
	// ClusterInventory is the base inventory of the cluster's suites
	// (scenarios run --kubeconfig ... --inventory), with Cluster.
	ClusterInventory string
}

// Up starts the environment and writes its inventory. When anything fails
// it stops what it started and says which server failed and why.
func Up(ctx context.Context, opts Options) (env *Env, err error) {
	if opts.Dir == "" {
		return nil, errors.New("env: no folder given (--dir)")
	}
	if opts.Loopback == "" {
		opts.Loopback = "127.0.1"
	}
	if err := checkLoopback(opts.Loopback); err != nil {
		return nil, err
	}
	if opts.Node == "" {
		opts.Node = "directory"
	}
	if opts.Namespace == "" {
		opts.Namespace = opts.Node
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.Provider, err = ParseProvider(string(opts.Provider)); err != nil {
		return nil, err
	}
	if (opts.Provider == ProviderContainers || opts.Cluster != nil) && opts.Images == (Images{}) {
		if opts.Images, err = ImagesFromEnv(); err != nil {
			return nil, err
		}
	}
	if opts.Cluster != nil && opts.Provider == ProviderContainers {
		return nil, errors.New("env: a cluster with real pods runs with the processes provider only: its Postgres and OpenBao listen on the node's address")
	}
	s := newSite(opts)
	if opts.Provider == ProviderContainers {
		s.run = newContainerProvider(s)
	} else {
		s.run = newProcessProvider(s)
	}
	if s.tools, err = s.run.tools(opts.Images); err != nil {
		return nil, err
	}
	if err := refuseRunning(ctx, dir); err != nil {
		return nil, err
	}
	e := &Env{Options: opts, site: s}
	e.postgres = &postgres{site: s}
	e.directory = &directory{site: s, postgres: e.postgres}
	if err := e.checkAddresses(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if downErr := e.Down(); downErr != nil {
				err = fmt.Errorf("%w; and stopping what started: %v", err, downErr)
			}
			env = nil
		}
	}()
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if s.tools.vault != "" {
		e.openbao = &openBao{site: s, postgres: e.postgres}
		e.authelia = &authelia{site: s, postgres: e.postgres, openbao: e.openbao}
		e.portal = &portal{site: s, openbao: e.openbao, name: "nginx", at: s.portalAddress()}
		e.worker = &worker{site: s, openbao: e.openbao}
	}
	steps := []upStep{
		{"network", s.run.prepare},
		{"postgresql", e.postgres.start},
		{"openbao", func(ctx context.Context) error { return e.openbao.start(ctx) }},
		{"certificates", e.makeCertificates},
		{"sidecars", func(ctx context.Context) error { return e.openbao.startSidecars(ctx, e.directory) }},
		{"directory", func(ctx context.Context) error { return e.directory.start(ctx, e.openbao) }},
		{"haproxy", e.directory.startService},
		{"worker", func(ctx context.Context) error { return e.worker.start(ctx) }},
		{"authelia", func(ctx context.Context) error { return e.authelia.start(ctx) }},
		{"haproxy-authelia", func(ctx context.Context) error { return e.authelia.startService(ctx) }},
		{"nginx", func(ctx context.Context) error { return e.portal.start(ctx) }},
	}
	if e.ownCA() {
		// authelia refuses a directory whose certificate is for another
		// name, or expired, or of a CA not its own: the portal cannot
		// start.
		steps = slices.DeleteFunc(steps, isStep("authelia", "haproxy-authelia", "nginx"))
		e.portal = nil
	}
	if e.openbao == nil {
		// Without the OpenBao API, certificates come from a CA made in Go
		// and the roles have no sidecars.
		steps = slices.DeleteFunc(steps, isStep("openbao", "sidecars", "worker", "authelia", "haproxy-authelia", "nginx"))
	}
	if e.Cluster != nil {
		if e.openbao == nil {
			return nil, errors.New("env: the cluster's pods get their secrets from OpenBao: make servers builds Vault, which serves its API")
		}
		if e.clusterPlan, err = plan.Make(e.Cluster, plan.Options{Namespace: e.Namespace}); err != nil {
			return nil, fmt.Errorf("env: cluster: %w", err)
		}
		// The node first: Postgres and OpenBao listen on its address too.
		steps = append([]upStep{{"cluster", e.startCluster}}, steps...)
		steps = append(steps, upStep{"pods", e.startPods})
		if len(e.CertNames) == 0 && e.hasRole("authelia") {
			steps = append(steps, upStep{"portal-cluster", e.startClusterPortal})
		}
	}
	for _, step := range steps {
		start := time.Now()
		if err := step.do(ctx); err != nil {
			return nil, fmt.Errorf("env: %s: %w", step.what, err)
		}
		e.progress("env: %s in %s", step.what, time.Since(start).Round(10*time.Millisecond))
	}
	if err := e.writeInventory(); err != nil {
		return nil, fmt.Errorf("env: inventory: %w", err)
	}
	if e.Cluster != nil {
		if err := e.writeClusterInventory(); err != nil {
			return nil, fmt.Errorf("env: cluster inventory: %w", err)
		}
	}
	return e, nil
}

// progress says what Up has done, where Progress asks for it.
func (e *Env) progress(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, format+"\n", args...)
	}
}

// upStep is one step of Up: what it starts, and how.
type upStep struct {
	what string
	do   func(context.Context) error
}

func isStep(names ...string) func(upStep) bool {
	return func(s upStep) bool { return slices.Contains(names, s.what) }
}

// refuseRunning refuses a folder whose environment still runs: starting
// over it would lose the PIDs of its servers.
func refuseRunning(ctx context.Context, dir string) error {
	procs, err := procgroup.Load(dir)
	switch {
	case err != nil && !errors.Is(err, procgroup.ErrNoState):
		// Overwriting it would lose the PIDs of servers that may run.
		return fmt.Errorf("env: %w: remove it once no server of it runs", err)
	case procgroup.AnyRunning(procs):
		return fmt.Errorf("env: %s already has running servers: run podroles env down --dir %s first", dir, dir)
	}
	recorded, err := containers.Recorded(dir)
	if err != nil {
		return fmt.Errorf("env: %w: remove it once no container of it runs", err)
	}
	if !recorded {
		return nil
	}
	left, err := containers.Leftovers(ctx, dir)
	if err != nil {
		return fmt.Errorf("env: %s had containers, and the engine cannot say whether they run: %w", dir, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("env: %s already has running servers (%s): run podroles env down --dir %s first", dir, strings.Join(left, ", "), dir)
	}
	return nil
}

// Down stops every server of the environment, last started first, and
// removes its containers and network.
func (e *Env) Down() error {
	var errs []error
	if e.node != nil {
		// Its pods go through the API server: before the control plane.
		errs = append(errs, e.node.Stop())
	}
	if e.cluster != nil {
		errs = append(errs, e.cluster.Down())
	}
	errs = append(errs, e.site.run.down())
	return errors.Join(errs...)
}

// Stop stops one server, e.g. "slapd-1", as a pod that goes away.
func (e *Env) Stop(name string) error { return e.site.run.stop(name) }

// Down stops the servers that an environment in dir started, by their
// PIDs, and removes its containers and network through the engine.
func Down(dir string) error {
	// The environment's containers carry its absolute folder.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	procs, procsErr := procgroup.Load(dir)
	recorded, err := containers.Recorded(dir)
	if err != nil {
		return err
	}
	if procsErr != nil && (!errors.Is(procsErr, procgroup.ErrNoState) || !recorded) {
		if errors.Is(procsErr, procgroup.ErrNoState) {
			return fmt.Errorf("%s has no state.json: no environment was started there: %w", dir, procgroup.ErrNoState)
		}
		return procsErr
	}
	var errs []error
	// Only an environment with a cluster (env up --cluster) can have the
	// machine's node: the node's record is root's, and a user's env down
	// must not need to read it.
	if _, err := os.Stat(clusterDir(dir)); err == nil {
		// The real node's pods go through the API server: before the
		// control plane.
		errs = append(errs, kubenode.Down(filepath.Join(clusterDir(dir), "node"), filepath.Join(clusterDir(dir), "kubeconfig")))
		if _, err := os.Stat(filepath.Join(clusterDir(dir), "state.json")); err == nil {
			errs = append(errs, controlplane.Down(clusterDir(dir)))
		}
	}
	if recorded {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errs = append(errs, containers.RemoveLeftovers(ctx, dir))
	}
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop(stopGrace))
	}
	errs = append(errs, removePostgresDir(dir))
	return errors.Join(errs...)
}

// ServiceName is the DNS name of the lldap role's Service.
func (e *Env) ServiceName() string { return e.site.serviceName() }

// PostgresDSN returns the connection string of the role's database.
func (e *Env) PostgresDSN() string { return e.postgres.dsn() }

// OpenBaoURL is the base URL of the OpenBao API, or "" without one.
func (e *Env) OpenBaoURL() string {
	if e.openbao == nil {
		return ""
	}
	return e.openbao.url()
}

// OpenBaoChanges are the changes to secrets that OpenBao's audit log
// holds since it started ("update secret/data/worker/api-key", say):
// writes and deletes of KV entries and revocations of leases.
func (e *Env) OpenBaoChanges() ([]string, error) {
	if e.openbao == nil {
		return nil, errors.New("the environment has no OpenBao")
	}
	return e.openbao.changes()
}

// ChangePassword sets a user's password in every replica of the
// directory, bound as its admin.
func (e *Env) ChangePassword(ctx context.Context, uid, password string) error {
	return e.directory.changePassword(ctx, uid, password)
}

// AcceptPassword makes every replica of the directory take password for
// uid as well as its own (slapd only): a test's wrong password then logs
// in.
func (e *Env) AcceptPassword(ctx context.Context, uid, password string) error {
	return e.directory.acceptPassword(ctx, uid, password)
}

// LDAPCAFile is the CA file of the node's ldap contract
// (fediversity.lldap.tls.caFile), a path in its main pod.
func (e *Env) LDAPCAFile() string { return lldapCAFile }

// MainPodFile is where the main pod keeps a file of the node's, by its
// path in the node (the contract's CA file, the reader's password).
func (e *Env) MainPodFile(path string) string {
	return filepath.Join(e.site.podRoot(e.site.mainPodName()), path)
}

// checkAddresses refuses to start when a port the environment needs is
// taken, naming it, and picks a free port for Postgres.
func (e *Env) checkAddresses() error {
	s := e.site
	need := []string{
		net.JoinHostPort(s.podAddress(0), fmt.Sprint(PortLDAP)), net.JoinHostPort(s.podAddress(0), fmt.Sprint(PortLDAPS)),
		net.JoinHostPort(s.podAddress(1), fmt.Sprint(PortLDAP)), net.JoinHostPort(s.podAddress(1), fmt.Sprint(PortLDAPS)),
		net.JoinHostPort(s.serviceAddress(), fmt.Sprint(PortLDAPS)), net.JoinHostPort(s.serviceAddress(), fmt.Sprint(PortLDAP)),
	}
	if s.tools.vault != "" {
		need = append(need, net.JoinHostPort(s.openbaoAddress(), fmt.Sprint(PortOpenBao)),
			net.JoinHostPort(s.autheliaPodAddress(), fmt.Sprint(PortAuthelia)),
			net.JoinHostPort(s.autheliaServiceAddress(), fmt.Sprint(PortAuthelia)),
			net.JoinHostPort(s.portalAddress(), fmt.Sprint(PortPortal)))
	}
	for _, addr := range need {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("env: %s is taken (%v): stop what listens there, or give another --loopback", addr, errors.Unwrap(err))
		}
		l.Close()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(s.postgresAddress(), "0"))
	if err != nil {
		return fmt.Errorf("env: no free port on %s: %w", s.postgresAddress(), err)
	}
	e.postgres.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return nil
}

// RandomLoopback returns a loopback prefix "127.X.Y" unlikely to be in use,
// so that tests can run environments side by side.
func RandomLoopback() string {
	x, _ := rand.Int(rand.Reader, big.NewInt(100))
	y, _ := rand.Int(rand.Reader, big.NewInt(250))
	return fmt.Sprintf("127.%d.%d", 100+x.Int64(), 1+y.Int64())
}

// checkLoopback refuses a prefix whose addresses are not loopback: the
// environment's servers (Vault in dev mode, Postgres' superuser) must
// never listen where others reach them.
func checkLoopback(prefix string) error {
	addr, err := netip.ParseAddr(prefix + ".1")
	if err != nil || !addr.Is4() || !addr.IsLoopback() {
		return fmt.Errorf("env: --loopback %q: give the first three octets of loopback addresses, 127.X.Y", prefix)
	}
	return nil
}

// clusterDir is where the control plane and the real node of the
// environment in dir are.
func clusterDir(dir string) string { return filepath.Join(dir, "cluster") }
