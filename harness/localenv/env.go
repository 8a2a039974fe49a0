// Package localenv starts the local environment that the scenario suites
// run in. It runs real servers on loopback addresses that stand for a
// node's role pods. Two OpenLDAP slapd replicas are the pods of the
// lldap role (or lldap's own image, where the containers provider has
// it), HAProxy is the role's Service, passing TLS through, and
// PostgreSQL the database out of the pods; where make servers built
// them, Vault serves OpenBao's API with an agent per pod, authelia is a
// role of its own and nginx the main pod's portal. It writes the
// inventory that the suites read, and nothing else of it reaches them.
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
	"strings"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/procgroup"
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
	// Faults break the environment on purpose, for the tests that see
	// the scenario that guards each fail; the zero value breaks nothing.
	Faults Faults
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
	// its own (processes provider only): see RealPods, whose Inventory
	// the cluster's suites run through.
	Cluster *facts.Node
	// NodeWait is how long to wait for the machine's node, which another
	// run may hold.
	NodeWait time.Duration
	// Progress receives a line per step of Up, with its duration; nil
	// drops them.
	Progress io.Writer
}

// Faults break a local environment on purpose, one thing each: a test
// sets one and sees the scenario named with it fail (the breaking cases of
// package scenarios). The zero value is the environment as it should be.
type Faults struct {
	// CertNames: the lldap role's certificate is for these names, not
	// the Service's (ldap/service-ldaps-bind), or for them and any name
	// under .invalid (ldap/wrong-name-refused). Authelia would refuse
	// such a directory: the portal does not start.
	CertNames []string
	// PlainPortOnService: the Service also answers on the plain LDAP
	// port, which it does not declare (ldap/plain-port-not-on-service).
	PlainPortOnService bool
	// ExpiredCertificate: the Service's certificate has expired, from a
	// CA made in Go that the contract's CA file holds
	// (ldap/wrong-ca-refused).
	ExpiredCertificate bool
	// PortalTrustsOtherCA: nginx verifies authelia with a CA that did not
	// sign its certificate (authelia/portal-login).
	PortalTrustsOtherCA bool
	// AutheliaStaticCredential: authelia reaches Postgres with a
	// credential that never expires, from a KV entry, not the database
	// engine's (authelia/login-stored-in-postgres).
	AutheliaStaticCredential bool
	// AutheliaStaticValidUntil: with AutheliaStaticCredential, the
	// credential's VALID UNTIL ("infinity": a date that never comes).
	AutheliaStaticValidUntil string
	// PostgresInPod: PostgreSQL serves at the lldap role's first pod's
	// address, a database inside the role's pod (postgres/data-outside-pod).
	PostgresInPod bool
	// ServiceBeforeSecrets: the worker role's service starts before its
	// sidecar wrote its secrets, and nothing restarts it when they come
	// (secrets/service-started-after-secrets).
	ServiceBeforeSecrets bool
	// NoRestartOn: the pods of these roles ("lldap"), or of a role for
	// one secret ("lldap/key-seed"), do not restart their service when a
	// secret with restart changes (the rotation suite's restarts).
	NoRestartOn []string
	// RestartOnEverySecret: a pod restarts its service when any secret
	// changes, those without restart too
	// (rotation/secret-without-restart-restarts-nothing).
	RestartOnEverySecret bool
	// RestartWithSidecar: a pod restarts its service whenever its sidecar
	// restarts (rotation/sidecar-restart-restarts-nothing).
	RestartWithSidecar bool
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
	// realPods is the cluster variant, with Cluster.
	realPods *RealPods
}

// Up starts the environment and writes its inventory. When anything fails
// it stops what it started and says which server failed and why.
func Up(ctx context.Context, opts Options) (env *Env, err error) {
	if err := opts.withDefaults(); err != nil {
		return nil, err
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
	if err := refuseRunning(ctx, opts.Dir); err != nil {
		return nil, err
	}
	e := &Env{Options: opts, site: s}
	e.postgres = &postgres{site: s}
	e.directory = &directory{site: s, postgres: e.postgres}
	if err := e.checkAddresses(); err != nil {
		return nil, err
	}
	if s.tools.vault != "" {
		e.openbao = &openBao{site: s, postgres: e.postgres}
		e.authelia = &authelia{site: s, postgres: e.postgres, openbao: e.openbao}
		e.worker = &worker{site: s, openbao: e.openbao}
		// authelia refuses a directory whose certificate is for another
		// name, or expired, or of a CA not its own: then no portal.
		if !e.ownCA() {
			e.portal = &portal{site: s, openbao: e.openbao, name: "nginx", at: s.portalAddress()}
		}
	}
	if e.Cluster != nil {
		if e.openbao == nil {
			return nil, errors.New("env: the cluster's pods get their secrets from OpenBao: make servers builds Vault, which serves its API")
		}
		if e.realPods, err = newRealPods(e.Options, s, e.postgres, e.openbao, e.directory); err != nil {
			return nil, fmt.Errorf("env: cluster: %w", err)
		}
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
	for _, step := range e.steps() {
		start := time.Now()
		if err := step.do(ctx); err != nil {
			return nil, fmt.Errorf("env: %s: %w", step.what, err)
		}
		e.progress("env: %s in %s", step.what, time.Since(start).Round(10*time.Millisecond))
	}
	if err := e.writeInventory(); err != nil {
		return nil, fmt.Errorf("env: inventory: %w", err)
	}
	if e.realPods != nil {
		if err := e.realPods.writeInventory(); err != nil {
			return nil, fmt.Errorf("env: cluster inventory: %w", err)
		}
	}
	return e, nil
}

// withDefaults fills in what the options leave out, and refuses what no
// environment can be.
func (o *Options) withDefaults() (err error) {
	if o.Dir == "" {
		return errors.New("env: no folder given (Options.Dir)")
	}
	if o.Loopback == "" {
		o.Loopback = "127.0.1"
	}
	if err := CheckLoopback(o.Loopback); err != nil {
		return fmt.Errorf("env: %w", err)
	}
	if o.Node == "" {
		o.Node = "directory"
	}
	if o.Namespace == "" {
		o.Namespace = o.Node
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return err
	}
	if o.Provider, err = ParseProvider(string(o.Provider)); err != nil {
		return err
	}
	if (o.Provider == ProviderContainers || o.Cluster != nil) && o.Images == (Images{}) {
		if o.Images, err = ImagesFromEnv(); err != nil {
			return err
		}
	}
	if o.Cluster != nil && o.Provider == ProviderContainers {
		return errors.New("env: a cluster with real pods runs with the processes provider only: its Postgres and OpenBao listen on the node's address")
	}
	return nil
}

// steps are what Up starts, in order: each server the world has, added
// in turn.
func (e *Env) steps() []upStep {
	var steps []upStep
	add := func(what string, do func(context.Context) error) { steps = append(steps, upStep{what, do}) }
	if e.realPods != nil {
		// The node first: Postgres and OpenBao listen on its address too.
		add("cluster", e.realPods.start)
	}
	add("network", e.site.run.prepare)
	add("postgresql", e.postgres.start)
	// Without the OpenBao API, certificates come from a CA made in Go and
	// the roles have no sidecars.
	if e.openbao != nil {
		add("openbao", e.openbao.start)
	}
	add("certificates", e.makeCertificates)
	if e.openbao != nil {
		add("sidecars", func(ctx context.Context) error { return e.openbao.startSidecars(ctx, e.directory) })
	}
	add("directory", func(ctx context.Context) error { return e.directory.start(ctx, e.openbao) })
	add("haproxy", e.directory.startService)
	if e.worker != nil {
		add("worker", e.worker.start)
	}
	if e.portal != nil {
		add("authelia", e.authelia.start)
		add("haproxy-authelia", e.authelia.startService)
		add("nginx", e.portal.start)
	}
	if e.realPods != nil {
		add("pods", e.realPods.startPods)
		if len(e.Faults.CertNames) == 0 && e.realPods.hasRole("authelia") {
			add("portal-cluster", e.realPods.startPortal)
		}
	}
	return steps
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

// RealPods is the cluster variant of the environment, nil without
// Options.Cluster.
func (e *Env) RealPods() *RealPods { return e.realPods }

// Down stops every server of the environment, last started first, and
// removes its containers and network.
func (e *Env) Down() error {
	var errs []error
	if r := e.realPods; r != nil {
		if r.node != nil {
			// Its pods go through the API server: before the control
			// plane.
			errs = append(errs, r.node.Stop())
		}
		if r.controlPlane != nil {
			errs = append(errs, r.controlPlane.Down())
		}
	}
	errs = append(errs, e.site.run.down())
	return errors.Join(errs...)
}

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

// Servers is what a test reaches inside a running environment: its
// servers' addresses, and the changes a breaking case makes to them.
type Servers struct{ e *Env }

// Servers reaches the environment's servers.
func (e *Env) Servers() Servers { return Servers{e} }

// Stop stops one server, e.g. "slapd-1", as a pod that goes away.
func (v Servers) Stop(name string) error { return v.e.site.run.stop(name) }

// PostgresDSN returns the connection string of the role's database.
func (v Servers) PostgresDSN() string { return v.e.postgres.dsn() }

// OpenBaoURL is the base URL of the OpenBao API, or "" without one.
func (v Servers) OpenBaoURL() string {
	if v.e.openbao == nil {
		return ""
	}
	return v.e.openbao.url()
}

// OpenBaoChanges are the changes to secrets that OpenBao's audit log
// holds since it started ("update secret/data/worker/api-key", say):
// writes and deletes of KV entries and revocations of leases.
func (v Servers) OpenBaoChanges() ([]string, error) {
	if v.e.openbao == nil {
		return nil, errors.New("the environment has no OpenBao")
	}
	return v.e.openbao.changes()
}

// ChangePassword sets a user's password in every replica of the
// directory, bound as its admin.
func (v Servers) ChangePassword(ctx context.Context, uid, password string) error {
	return v.e.directory.changePassword(ctx, uid, password)
}

// AcceptPassword makes every replica of the directory take password for
// uid as well as its own (slapd only): a test's wrong password then logs
// in.
func (v Servers) AcceptPassword(ctx context.Context, uid, password string) error {
	return v.e.directory.acceptPassword(ctx, uid, password)
}

// AddMember makes uid a member of group in every replica of the
// directory (slapd only).
func (v Servers) AddMember(ctx context.Context, group, uid string) error {
	return v.e.directory.addMember(ctx, group, uid)
}

// LDAPCAFile is the CA file of the node's ldap contract
// (fediversity.lldap.tls.caFile), a path in its main pod.
func (v Servers) LDAPCAFile() string { return lldapCAFile }

// ReaderPasswordFile is the reader's password file of the node's ldap
// contract (fediversity.lldap.readerBindPasswordFile), a path in its main
// pod.
func (v Servers) ReaderPasswordFile() string { return readerBindPasswordFile }

// MainPodFile is where the main pod keeps a file of the node's, by its
// path in the node (the contract's CA file, the reader's password).
func (v Servers) MainPodFile(path string) string {
	return filepath.Join(v.e.site.podRoot(v.e.site.mainPodName()), path)
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

// CheckLoopback refuses a prefix whose addresses are not loopback: the
// environment's servers (Vault in dev mode, Postgres' superuser) must
// never listen where others reach them.
func CheckLoopback(prefix string) error {
	addr, err := netip.ParseAddr(prefix + ".1")
	if err != nil || !addr.Is4() || !addr.IsLoopback() {
		return fmt.Errorf("loopback %q: give the first three octets of loopback addresses, 127.X.Y", prefix)
	}
	return nil
}

// clusterDir is where the control plane and the real node of the
// environment in dir are.
func clusterDir(dir string) string { return filepath.Join(dir, "cluster") }
