package localenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/ready"
)

// site is what the parts of an environment share, and nothing they own:
// the options, the addresses and paths derived from them, the programs,
// the passwords, the CA the servers' certificates chain to, and the
// provider that runs the servers.
type site struct {
	Options
	layout
	tools   tools
	secrets secrets
	// caPEM is the CA of the environment's certificates: OpenBao's PKI
	// engine's, or one made in Go without it.
	caPEM []byte
	run   provider
}

// secrets are the environment's passwords, each also in a file of
// secrets/, which the inventory names.
type secrets struct {
	bind, admin, rootDN, pgSuper, pgRole, pgOpenBao, pgAutheliaStatic, openbaoRoot string
}

// provider is how an environment runs its servers: as local processes, or
// each in a container. Everything else (the servers, their
// configurations, the inventory) is the environment's, the same for both:
// the suites never know which ran.
type provider interface {
	// tools are the programs as the provider runs them.
	tools(im Images) (tools, error)
	// prepare makes what the servers share, before any starts.
	prepare(ctx context.Context) error
	// startPostgres starts PostgreSQL on pg's address with its
	// superuser's password: its data folder is the provider's.
	startPostgres(ctx context.Context, pg *postgres) (ready.Server, error)
	// launch starts a server, after running opts.before where it runs.
	launch(ctx context.Context, name string, argv []string, opts launchOptions) (ready.Server, error)
	// listen is the address a server listens on, for host: the address
	// the processes provider gives it, where its port is reached.
	listen(host string) string
	// reach is where one server reaches another, name, which the
	// processes provider has at host.
	reach(name, host string) string
	// stop stops one server, as a pod that goes away.
	stop(name string) error
	// down stops every server, last started first.
	down() error
}

// launchOptions say how a server runs, whichever the provider.
type launchOptions struct {
	// publish maps a port the server listens on, in a container, to the
	// loopback address of the host where it is published (containers).
	publish map[int]string
	// before are commands run first where the server runs (slapadd,
	// haproxy -c, nginx -t); one that fails stops the start.
	before [][]string
	// secretEnv sets variables from files where the server runs, so that
	// a secret reaches neither argv nor a container engine's config.
	secretEnv map[string]string
	// image is the container's own image, when not the servers' image.
	image      string
	dir        string
	env        []string
	stopSignal syscall.Signal
}

// newSite is the site of opts, its layout reading its options.
func newSite(opts Options) *site {
	s := &site{Options: opts}
	s.layout = layout{&s.Options}
	return s
}

func (s *site) launch(ctx context.Context, name string, argv []string, opts launchOptions) (ready.Server, error) {
	return s.run.launch(ctx, name, argv, opts)
}

func (s *site) listen(host string) string { return s.run.listen(host) }

func (s *site) reach(name, host string) string { return s.run.reach(name, host) }

// layout is where an environment's parts are: the addresses, names and
// paths that follow from its options alone. It reads the options of the
// site it belongs to, so the two never disagree.
type layout struct{ *Options }

// Hosts are the last octet of every address an environment takes on
// its loopback prefix, in one table, so that no two parts share one
// (docs/environment.md lists them).
const (
	hostLLDAPPod        = 1 // and 2: the lldap role's pods
	hostLLDAPService    = 10
	hostAutheliaService = 11
	hostPostgres        = 20
	hostOpenBao         = 30
	hostAutheliaPod     = 40
	hostPortal          = 50
	hostClusterPortal   = 51 // the portal in front of the cluster's authelia
	hostWorkerPod       = 61
	// The control plane's: its API server and etcd, and the fake node's
	// kubelet.
	hostAPIServer = controlplane.HostAPIServer
	hostFakeNode  = controlplane.HostFakeNode
)

// host is the address of a host of the table on the loopback prefix.
func (s layout) host(h int) string { return fmt.Sprintf("%s.%d", s.Loopback, h) }

// Addresses of the environment's pods and Services.
func (s layout) podAddress(i int) string        { return s.host(hostLLDAPPod + i) }
func (s layout) serviceAddress() string         { return s.host(hostLLDAPService) }
func (s layout) autheliaServiceAddress() string { return s.host(hostAutheliaService) }
func (s layout) postgresAddress() string {
	if s.Faults.PostgresInPod {
		return s.podAddress(0)
	}
	return s.host(hostPostgres)
}
func (s layout) openbaoAddress() string          { return s.host(hostOpenBao) }
func (s layout) autheliaPodAddress() string      { return s.host(hostAutheliaPod) }
func (s layout) portalAddress() string           { return s.host(hostPortal) }
func (s layout) workerAddress() string           { return s.host(hostWorkerPod) }
func (s layout) secretPath(name string) string   { return filepath.Join(s.Dir, "secrets", name) }
func (s layout) podName(i int) string            { return fmt.Sprintf("%s-lldap-%d", s.Node, i) }
func (s layout) autheliaPodName() string         { return s.Node + "-authelia-0" }
func (s layout) podStatusFile(pod string) string { return filepath.Join(s.podRoot(pod), "status.json") }
func (s layout) podSecretsDir(i int) string      { return s.podSecrets(s.podName(i)) }
func (s layout) autheliaSecretsDir() string      { return s.podSecrets(s.autheliaPodName()) }
func (s layout) podSecrets(pod string) string    { return filepath.Join(s.podRoot(pod), "run", "secrets") }
func (s layout) sidecarStatusFile(pod string) string {
	return filepath.Join(s.podRoot(pod), "sidecar-status.json")
}
func (s layout) sidecarRestartFile(pod string) string {
	return filepath.Join(s.podRoot(pod), "restart-sidecar")
}
func (s layout) mainPodName() string         { return s.Node + "-0" }
func (s layout) workerPodName() string       { return s.Node + "-" + workerRole + "-0" }
func (s layout) workerSecretsDir() string    { return s.podSecrets(s.workerPodName()) }
func (s layout) serviceName() string         { return s.roleServiceName("lldap") }
func (s layout) autheliaServiceName() string { return s.roleServiceName("authelia") }
func (s layout) roleServiceName(role string) string {
	return fmt.Sprintf("%s-%s.%s.svc.cluster.local", s.Node, role, s.Namespace)
}

// podRoot is the folder that stands for a pod's file system: its
// /run/secrets is run/secrets in it. No service account token is mounted
// there, as the spec asks for pods of a service's image (US1-7).
func (s layout) podRoot(pod string) string { return filepath.Join(s.Dir, "pods", pod) }

// prepare makes the folders and the secrets. The environment's folder
// keeps the mode it has (a new one is the owner's alone): nothing of
// another user needs it (PostgreSQL's folder goes elsewhere where its
// user cannot reach it, see postgresDir). What it makes is the owner's
// alone: logs may hold what servers print of secrets.
func (s *site) prepare() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	for _, d := range []string{"logs", "tls", "secrets"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o700); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(s.Dir, d), 0o700); err != nil {
			return err
		}
	}
	for _, sec := range []struct {
		file string
		dst  *string
	}{
		{"bind-password", &s.secrets.bind}, {"admin-password", &s.secrets.admin}, {"rootdn-password", &s.secrets.rootDN},
		{"postgres-superuser-password", &s.secrets.pgSuper}, {"postgres-lldap-password", &s.secrets.pgRole},
		{"postgres-openbao-password", &s.secrets.pgOpenBao}, {"openbao-token", &s.secrets.openbaoRoot},
		{"postgres-authelia-static-password", &s.secrets.pgAutheliaStatic},
	} {
		*sec.dst = randomPassword()
		if err := writeFile(s.secretPath(sec.file), []byte(*sec.dst+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// randomPassword is 24 random characters of base64url: no character that
// needs quoting in a DSN, LDIF or SQL literal.
func randomPassword() string {
	b := make([]byte, 18)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// stopGrace is how long a server may take to stop before it is killed.
const stopGrace = 10 * time.Second
