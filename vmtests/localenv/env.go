// Package vmtests starts the environments that the scenario suites run in.
// Its local environment is real servers on loopback addresses standing for
// a node's role pods: two OpenLDAP slapd replicas as the pods of the lldap
// role (lldap itself is not in the registries this machine reaches; slapd
// serves the same LDAP protocol), HAProxy as the role's Service, passing
// TLS through, and PostgreSQL as the database out of the pods. Certificates
// come from a CA made in Go, as OpenBao's PKI engine would issue them. It
// writes the inventory that the suites read.
//
// Every server is started by this package and stopped by its PID: Down
// stops them, `podroles env down` stops those of an earlier `env up`, and
// servers of an attached environment (tests) die with the process that
// started them even when it is killed.
package vmtests

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	mobynetwork "github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"

	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
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
	// PlainPortOnService puts the plain LDAP port on the Service too (a
	// test breaks the environment on purpose).
	PlainPortOnService bool
	// PortalTrustsOtherCA points nginx's proxy_ssl_trusted_certificate at
	// a CA that did not sign authelia's certificate (a test, on purpose).
	PortalTrustsOtherCA bool
	// NoRestart runs the pods without watching their secrets with
	// restart (a test breaks US1-13 on purpose).
	NoRestart bool
	// Podroles is the podroles binary, whose hidden pod command
	// supervises the pods of roles with secrets; found or built when
	// empty.
	Podroles string
	// Provider runs the pods as local processes (the default) or as
	// containers; Images are the containers' images (ImagesFromEnv when
	// empty).
	Provider Provider
	Images   Images
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

	procs []*proc
	tools tools

	// With the containers provider: the network, the containers, and
	// their addresses on it by name.
	network    *testcontainers.DockerNetwork
	containers []*podContainer
	ips        map[string]string
	declared   map[string][]mobynetwork.Port // ports by image
	mounted    []string                      // host programs, at their paths

	// run runs the servers, as the provider says.
	run provider
	// cluster is the control plane that UpCluster started, if any.
	cluster *ControlPlane

	secrets secrets
	pgPort  int

	// With OpenBao: its client, the KV entries it holds, and its CA.
	openbao *openbao.Client
	kv      map[string]map[string]any
	caPEM   []byte
}

// secrets are the environment's passwords, each also in a file of
// secrets/, which the inventory names.
type secrets struct {
	bind, admin, rootDN, pgSuper, pgRole, pgOpenBao, openbaoRoot string
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
	if opts.Provider == ProviderContainers && opts.Images == (Images{}) {
		opts.Images = ImagesFromEnv()
	}
	e := &Env{Options: opts}
	e.run = processes{e}
	if opts.Provider == ProviderContainers {
		e.run = containers{e}
	}
	if e.tools, err = e.run.tools(e.Images); err != nil {
		return nil, err
	}
	st, err := loadState(dir)
	switch {
	case err != nil && !errors.Is(err, errNoState):
		// Overwriting it would lose the PIDs of servers that may run.
		return nil, fmt.Errorf("env: %w: remove it once no server of it runs", err)
	case err == nil && anyRunning(st.Procs):
		return nil, fmt.Errorf("env: %s already has running servers: run podroles env down --dir %s first", dir, opts.Dir)
	case err == nil && len(st.Containers) > 0:
		left, err := EngineLeftovers(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("env: %s had containers, and the engine cannot say whether they run: %w", dir, err)
		}
		if len(left) > 0 {
			return nil, fmt.Errorf("env: %s already has running servers (%s): run podroles env down --dir %s first", dir, strings.Join(left, ", "), opts.Dir)
		}
	}
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
	if err := e.prepare(); err != nil {
		return nil, err
	}
	steps := []upStep{
		{"network", e.run.prepare},
		{"postgresql", e.run.startPostgres},
		{"openbao", e.startOpenBao},
		{"certificates", e.makeCertificates},
		{"sidecars", e.startSidecars},
		{"directory", e.startDirectory},
		{"haproxy", e.startService},
		{"authelia", e.startAuthelia},
		{"haproxy-authelia", e.startAutheliaService},
		{"nginx", e.startPortal},
	}
	if len(e.CertNames) > 0 {
		// authelia refuses a directory whose certificate is for another
		// name: the portal cannot start.
		steps = slices.DeleteFunc(steps, isStep("authelia", "haproxy-authelia", "nginx"))
	}
	if e.tools.vault == "" {
		// Without the OpenBao API, certificates come from a CA made in Go
		// and the roles have no sidecars.
		steps = slices.DeleteFunc(steps, isStep("openbao", "sidecars", "authelia", "haproxy-authelia", "nginx"))
	}
	for _, s := range steps {
		if err := s.do(ctx); err != nil {
			return nil, fmt.Errorf("env: %s: %w", s.what, err)
		}
	}
	if err := e.writeInventory(); err != nil {
		return nil, fmt.Errorf("env: inventory: %w", err)
	}
	return e, nil
}

// upStep is one step of Up: what it starts, and how.
type upStep struct {
	what string
	do   func(context.Context) error
}

func isStep(names ...string) func(upStep) bool {
	return func(s upStep) bool { return slices.Contains(names, s.what) }
}

// Down stops every server of the environment, last started first, and
// removes its containers and network.
func (e *Env) Down() error {
	var errs []error
	if e.cluster != nil {
		errs = append(errs, e.cluster.Down())
	}
	errs = append(errs, e.downContainers())
	for i := len(e.procs) - 1; i >= 0; i-- {
		errs = append(errs, e.procs[i].stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// Stop stops one server, e.g. "slapd-1", as a pod that goes away.
func (e *Env) Stop(name string) error {
	for _, c := range e.containers {
		if c.Name == name {
			return c.stop()
		}
	}
	for _, p := range e.procs {
		if p.Name == name {
			return p.stop(10 * time.Second)
		}
	}
	return fmt.Errorf("env: no server %s", name)
}

// Down stops the servers that an environment in dir started, by their
// PIDs, and removes its containers and network through the engine.
func Down(dir string) error {
	// The environment's containers carry its absolute folder.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	st, err := loadState(dir)
	if err != nil {
		return err
	}
	var errs []error
	if _, err := os.Stat(filepath.Join(clusterDir(dir), "state.json")); err == nil {
		errs = append(errs, Down(clusterDir(dir)))
	}
	if len(st.Containers) > 0 || st.Network != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errs = append(errs, removeLeftovers(ctx, dir))
	}
	for i := len(st.Procs) - 1; i >= 0; i-- {
		errs = append(errs, st.Procs[i].stop(10*time.Second))
	}
	return errors.Join(errs...)
}

func anyRunning(procs []*proc) bool {
	for _, p := range procs {
		if p.running() {
			return true
		}
	}
	return false
}

// tools are the programs the environment runs, and where slapd's schema
// and modules are.
type tools struct {
	slapd, slapadd, haproxy, initdb, postgres string
	// vault serves the OpenBao API, authelia the authelia role and nginx
	// the portal; "" when not built (make servers) or installed, and the
	// environment then runs without OpenBao and the portal.
	vault, authelia, nginx string
	// ldapSchema holds core.schema and its friends; ldapModules holds
	// back_mdb as a module, or is "" where slapd has it built in.
	ldapSchema, ldapModules string
}

// toolDirs are where the programs are looked for when PATH lacks them:
// Debian keeps slapd and haproxy in /usr/sbin and PostgreSQL's servers in
// a folder per version.
var toolDirs = map[string][]string{
	"slapd": {"/usr/sbin", "/usr/libexec"}, "slapadd": {"/usr/sbin"}, "haproxy": {"/usr/sbin"},
	"initdb": {"/usr/lib/postgresql/*/bin"}, "postgres": {"/usr/lib/postgresql/*/bin"},
}

func findTools() (tools, error) {
	var t tools
	var missing []string
	look := func(dst *string, name, pkg string) {
		if p, err := exec.LookPath(name); err == nil {
			*dst = p
			return
		}
		for _, d := range toolDirs[name] {
			matches, _ := filepath.Glob(filepath.Join(d, name))
			if len(matches) > 0 {
				*dst = matches[len(matches)-1]
				return
			}
		}
		missing = append(missing, fmt.Sprintf("%s (Debian: apt-get install %s)", name, pkg))
	}
	look(&t.slapd, "slapd", "slapd")
	look(&t.slapadd, "slapadd", "slapd")
	look(&t.haproxy, "haproxy", "haproxy")
	look(&t.initdb, "initdb", "postgresql")
	look(&t.postgres, "postgres", "postgresql")
	if len(missing) > 0 {
		return t, fmt.Errorf("env: missing programs: %v", missing)
	}
	// OpenBao's own command (bao, from the dev shell) keeps Vault's
	// flags; CI runs Vault, built by make servers.
	t.vault, t.authelia = findServer("vault"), findServer("authelia")
	if t.vault == "" {
		t.vault = findServer("bao")
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		t.nginx = p
	} else if isExecutable("/usr/sbin/nginx") {
		t.nginx = "/usr/sbin/nginx"
	}
	if t.vault != "" && (t.authelia == "" || t.nginx == "") {
		return t, fmt.Errorf("env: with vault, the portal needs authelia (make servers) and nginx (Debian: apt-get install nginx)")
	}
	// Debian keeps the schema in /etc/ldap and back_mdb in /usr/lib/ldap;
	// nixpkgs' openldap keeps both beside slapd.
	prefix := filepath.Dir(filepath.Dir(t.slapd))
	for _, d := range []string{"/etc/ldap/schema", "/etc/openldap/schema", filepath.Join(prefix, "etc", "schema"), filepath.Join(prefix, "etc", "openldap", "schema")} {
		if _, err := os.Stat(filepath.Join(d, "core.schema")); err == nil {
			t.ldapSchema = d
			break
		}
	}
	if t.ldapSchema == "" {
		return t, fmt.Errorf("env: slapd's schema (core.schema) is nowhere to be found (Debian: apt-get install slapd)")
	}
	for _, d := range []string{"/usr/lib/ldap", filepath.Join(prefix, "lib", "openldap"), filepath.Join(prefix, "libexec", "openldap")} {
		if _, err := os.Stat(filepath.Join(d, "back_mdb.so")); err == nil {
			t.ldapModules = d
			break
		}
	}
	return t, nil
}

// ServersEnv names the folder of the servers that make servers builds from
// the Go module proxy (Vault, Authelia).
const ServersEnv = "PODROLES_SERVERS"

// findServer looks for a built server in $PODROLES_SERVERS, then in PATH.
func findServer(name string) string {
	if dir := os.Getenv(ServersEnv); dir != "" {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func isExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// Addresses of the environment.
func (e *Env) podAddress(i int) string { return fmt.Sprintf("%s.%d", e.Loopback, i+1) }
func (e *Env) serviceAddress() string  { return e.Loopback + ".10" }
func (e *Env) postgresAddress() string { return e.Loopback + ".20" }

// ServiceName is the DNS name of the lldap role's Service.
func (e *Env) ServiceName() string {
	return fmt.Sprintf("%s-lldap.%s.svc.cluster.local", e.Node, e.Namespace)
}

// checkAddresses refuses to start when a port the environment needs is
// taken, naming it, and picks a free port for Postgres.
func (e *Env) checkAddresses() error {
	need := []string{
		net.JoinHostPort(e.podAddress(0), fmt.Sprint(PortLDAP)), net.JoinHostPort(e.podAddress(0), fmt.Sprint(PortLDAPS)),
		net.JoinHostPort(e.podAddress(1), fmt.Sprint(PortLDAP)), net.JoinHostPort(e.podAddress(1), fmt.Sprint(PortLDAPS)),
		net.JoinHostPort(e.serviceAddress(), fmt.Sprint(PortLDAPS)), net.JoinHostPort(e.serviceAddress(), fmt.Sprint(PortLDAP)),
	}
	if e.tools.vault != "" {
		need = append(need, net.JoinHostPort(e.openbaoAddress(), fmt.Sprint(PortOpenBao)),
			net.JoinHostPort(e.autheliaPodAddress(), fmt.Sprint(PortAuthelia)),
			net.JoinHostPort(e.autheliaServiceAddress(), fmt.Sprint(PortAuthelia)),
			net.JoinHostPort(e.portalAddress(), fmt.Sprint(PortPortal)))
	}
	for _, addr := range need {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("env: %s is taken (%v): stop what listens there, or give another --loopback", addr, errors.Unwrap(err))
		}
		l.Close()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(e.postgresAddress(), "0"))
	if err != nil {
		return fmt.Errorf("env: no free port on %s: %w", e.postgresAddress(), err)
	}
	e.pgPort = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return nil
}

// prepare makes the folders, the secrets and the certificates.
func (e *Env) prepare() error {
	// Others may pass through the folder (PostgreSQL runs as its own
	// user) but not list it; secrets/ is the owner's alone.
	for _, d := range []string{"", "logs", "tls", "secrets"} {
		if err := os.MkdirAll(filepath.Join(e.Dir, d), 0o711); err != nil {
			return err
		}
		os.Chmod(filepath.Join(e.Dir, d), 0o711)
	}
	os.Chmod(filepath.Join(e.Dir, "secrets"), 0o700)
	os.Chmod(filepath.Join(e.Dir, "logs"), 0o700)
	for _, s := range []struct {
		file string
		dst  *string
	}{
		{"bind-password", &e.secrets.bind}, {"admin-password", &e.secrets.admin}, {"rootdn-password", &e.secrets.rootDN},
		{"postgres-superuser-password", &e.secrets.pgSuper}, {"postgres-lldap-password", &e.secrets.pgRole},
		{"postgres-openbao-password", &e.secrets.pgOpenBao}, {"openbao-token", &e.secrets.openbaoRoot},
	} {
		*s.dst = randomPassword()
		if err := writeFile(e.secretPath(s.file), []byte(*s.dst+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// makeCertificates issues the certificate of the lldap role's Service:
// from OpenBao's PKI engine, whose CA is then the CA file of the ldap
// contract, or without OpenBao from a CA made in Go.
func (e *Env) makeCertificates(ctx context.Context) error {
	names := e.CertNames
	if len(names) == 0 {
		short := fmt.Sprintf("%s-lldap", e.Node)
		names = []string{e.ServiceName(), short + "." + e.Namespace + ".svc", short + "." + e.Namespace}
	}
	var cert, key []byte
	if e.openbao != nil && len(e.CertNames) == 0 {
		var err error
		if cert, key, err = e.issue(ctx, "internal", names); err != nil {
			return err
		}
	} else {
		// A name that OpenBao's role refuses (a test's) comes from a CA
		// made in Go, which signs anything.
		ca, err := pki.NewCA("podroles test PKI (" + e.Node + ")")
		if err != nil {
			return err
		}
		if cert, key, err = ca.Issue(names...); err != nil {
			return err
		}
		if e.caPEM == nil {
			e.caPEM = ca.PEM
		}
	}
	for name, data := range map[string][]byte{"ca.pem": e.caPEM, "server.pem": cert} {
		if err := writeFile(filepath.Join(e.Dir, "tls", name), data, 0o644); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(e.Dir, "tls", "server.key"), key, 0o600)
}

func (e *Env) secretPath(name string) string { return filepath.Join(e.Dir, "secrets", name) }

// randomPassword is 24 random characters of base64url: no character that
// needs quoting in a DSN, LDIF or SQL literal.
func randomPassword() string {
	b := make([]byte, 18)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// RandomLoopback returns a loopback prefix "127.X.Y" unlikely to be in use,
// so that tests can run environments side by side.
func RandomLoopback() string {
	x, _ := rand.Int(rand.Reader, big.NewInt(100))
	y, _ := rand.Int(rand.Reader, big.NewInt(250))
	return fmt.Sprintf("127.%d.%d", 100+x.Int64(), 1+y.Int64())
}

func (e *Env) writeInventory() error {
	inv := &inventory.Inventory{
		Node: e.Node,
		Roles: map[string]*inventory.Role{
			"lldap": {
				Server: e.directoryServer(),
				Service: &inventory.Endpoint{
					Name: e.ServiceName(), Address: e.serviceAddress(), Ports: e.servicePorts(),
				},
			},
		},
		LDAP: &inventory.LDAP{
			Role: "lldap", Host: e.ServiceName(), Port: PortLDAPS, PlainPort: PortLDAP, HTTPPort: e.podPorts()["http"],
			CAFile: "tls/ca.pem", BaseDN: baseDN,
			BindDN: "uid=authelia-bind,ou=people," + baseDN, BindPasswordFile: "secrets/bind-password",
			User: "authelia-bind", Group: "lldap_strict_readonly",
		},
		Postgres: &inventory.Postgres{
			Role: "lldap", DSNFile: "secrets/postgres-dsn", Schema: "lldap_provision", UsersTable: "users",
		},
	}
	for i := range replicas {
		pod := inventory.Endpoint{Name: e.podName(i), Address: e.podAddress(i), Ports: e.podPorts()}
		if e.openbao != nil {
			pod.SecretsDir, pod.StatusFile, pod.RootDir = e.podSecretsDir(i), e.podStatusFile(e.podName(i)), e.podRoot(e.podName(i))
		}
		inv.Roles["lldap"].Pods = append(inv.Roles["lldap"].Pods, pod)
	}
	if e.openbao != nil {
		inv.Roles["lldap"].Secrets = e.lldapSecrets()
		inv.OpenBao = &inventory.OpenBao{Address: e.OpenBaoURL(), TokenFile: "secrets/openbao-token"}
		// The suite may write these: test values of the environment's own.
		inv.Rotation = &inventory.Rotation{
			Restart:   &inventory.SecretRef{Role: "lldap", File: "key-seed"},
			NoRestart: &inventory.SecretRef{Role: "lldap", File: "jwt"},
		}
		if len(e.CertNames) == 0 {
			e.addPortal(inv)
		}
	}
	e.Inventory = filepath.Join(e.Dir, "inventory.yaml")
	return inv.Write(e.Inventory)
}

// addPortal adds the authelia role and the main pod's portal.
func (e *Env) addPortal(inv *inventory.Inventory) {
	inv.LDAP.AdminUser, inv.LDAP.AdminPasswordFile = "admin", "secrets/admin-password"
	inv.Roles["authelia"] = &inventory.Role{
		Server:  "authelia",
		Service: &inventory.Endpoint{Name: e.autheliaServiceName(), Address: e.autheliaServiceAddress(), Ports: map[string]int{"https": PortAuthelia}},
		Pods: []inventory.Endpoint{{Name: e.autheliaPodName(), Address: e.autheliaPodAddress(),
			Ports: map[string]int{"https": PortAuthelia}, SecretsDir: e.autheliaSecretsDir(), StatusFile: e.podStatusFile(e.autheliaPodName()),
			RootDir: e.podRoot(e.autheliaPodName())}},
		Secrets: e.autheliaSecrets(),
	}
	inv.Portal = &inventory.Portal{
		URL: "https://" + portalHost, Address: net.JoinHostPort(e.portalAddress(), fmt.Sprint(PortPortal)),
		CAFile: "tls/ca.pem", StorageDSNFile: "secrets/authelia-storage-dsn",
	}
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

// clusterDir is where UpCluster keeps the control plane of the
// environment in dir.
func clusterDir(dir string) string { return filepath.Join(dir, "cluster") }

// UpCluster starts a control plane beside the environment, on its loopback
// prefix, applies the node's plan p to it and binds the plan's pods to the
// environment's servers through kwok (Bindings), so that the suites run on
// a cluster inventory of the same world. Down stops it with the rest.
func (e *Env) UpCluster(ctx context.Context, p *plan.Plan) (*ControlPlane, error) {
	cp, err := StartControlPlane(ctx, ControlPlaneOptions{Dir: clusterDir(e.Dir), Loopback: e.Loopback, Nodes: true, Detached: e.Detached})
	if err != nil {
		return nil, fmt.Errorf("env: cluster: %w", err)
	}
	e.cluster = cp
	if err := cp.Apply(ctx, p); err != nil {
		return nil, fmt.Errorf("env: cluster: %w", err)
	}
	if _, err := cp.Bind(ctx, p, e.Bindings()); err != nil {
		return nil, fmt.Errorf("env: cluster: %w", err)
	}
	return cp, nil
}
