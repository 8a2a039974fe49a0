// Package inventory describes where a deployed node's world is. It
// covers the Service and pods of each role, the Postgres of the roles,
// OpenBao and the portal, with what the node states (the ldap contract,
// authelia's host and CA, the roles' secrets) taken from the node's
// facts. The scenario suites read nothing else. A person writes one for
// an existing deployment, `podroles env up` writes one for its local
// servers, and a cluster discovery fills the same model.
//
// The node is the truth of what it states: an inventory adds only what the
// node cannot know (addresses, the admin's password file, the database's
// connection string), and where it repeats what the node states, Reconcile
// holds it to the node's value and names both when they differ.
//
// Secrets (passwords, a DSN with its password, tokens) are never in the
// inventory: it names the files that hold them.
package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/fediversity/podroles/facts"
)

// MainRole names the main pod's role among the roles: the Deployment
// <node>, which holds the node's own files (those the ldap contract
// names). It is the plan's role label of the main pod.
const MainRole = "main"

// Inventory is one node's world.
type Inventory struct {
	// Node is the node's name.
	Node string `json:"node"`
	// FactsFile holds the node's facts, as podroles facts writes them:
	// what the node states, which the inventory takes from it. Without
	// it, the runner is given the node's sources.
	FactsFile string `json:"factsFile,omitempty"`
	// Roles are the node's roles by name, and the main pod's (MainRole).
	Roles map[string]*Role `json:"roles"`
	// LDAP is what the ldap contract returns to a reader, if the node
	// has a role that serves LDAP.
	LDAP *LDAP `json:"ldap,omitempty"`
	// Authelia is what the node states of its authelia role, which the
	// main pod's portal connects to; from the node.
	Authelia *Authelia `json:"authelia,omitempty"`
	// Postgres is the database out of the pods that a role keeps its data
	// in.
	Postgres *Postgres `json:"postgres,omitempty"`
	// OpenBao is the OpenBao (or Vault) that the roles' secrets come from.
	OpenBao *OpenBao `json:"openbao,omitempty"`
	// Portal is the authelia portal that the main pod's nginx serves.
	Portal *Portal `json:"portal,omitempty"`
	// Rotation names the KV secrets that the rotation suite may give new
	// values: writing a secret is not something to do unasked.
	Rotation *Rotation `json:"rotation,omitempty"`
	// Disruptive lets the scenarios that change the deployment run, as
	// scenarios run --disruptive does.
	Disruptive bool `json:"disruptive,omitempty"`
	// Cluster is the Kubernetes cluster the node is deployed to, for the
	// suites that compare it with the node's plan.
	Cluster *Cluster `json:"cluster,omitempty"`

	// Facts is the node the inventory describes, read from FactsFile or
	// given to Reconcile.
	Facts *facts.Node `json:"-"`
}

// Cluster says where the node's objects are and what they must be.
type Cluster struct {
	Kubeconfig string `json:"kubeconfig"`
	Namespace  string `json:"namespace"`
}

// Rotation names secrets by role and file.
type Rotation struct {
	// Restart is a KV field secret with restart.
	Restart *SecretRef `json:"restart,omitempty"`
	// NoRestart is a KV field secret without restart.
	NoRestart *SecretRef `json:"noRestart,omitempty"`
	// ReaderPassword is the secret of the ldap role that holds the
	// reader's password (its KV entry is the one the main pod renders).
	ReaderPassword *SecretRef `json:"readerPassword,omitempty"`
}

// SecretRef is one secret of a role.
type SecretRef struct {
	Role string `json:"role"`
	File string `json:"file"`
}

// StandInSlapd is OpenLDAP's slapd, which this project's environments run
// in place of lldap.
const StandInSlapd = "slapd"

// Role is where one role's pods and Service are.
type Role struct {
	// StandIn names a program the pods run in place of the service the
	// node names: slapd for lldap, in this project's environments. The
	// node says what a role runs; a suite that needs the node's service
	// skips on a stand-in, and says so.
	StandIn string `json:"standIn,omitempty"`
	// Service is the role's Service, if the role has ports.
	Service *Endpoint `json:"service,omitempty"`
	// Pods are the role's pods.
	Pods []Endpoint `json:"pods"`
	// Secrets are the role's secrets by file name, as the node defines
	// them (fediversity.podRoles.roles.<r>.secrets): from the node.
	Secrets map[string]facts.Secret `json:"secrets,omitempty"`
}

// Endpoint is a Service or a pod: a name, an address and named ports.
type Endpoint struct {
	// Name is the Service's DNS name, or the pod's name.
	Name    string         `json:"name"`
	Address string         `json:"address"`
	Ports   map[string]int `json:"ports,omitempty"`
	// SecretsDir is where the pod's /run/secrets can be read, for a pod
	// of a role with secrets.
	SecretsDir string `json:"secretsDir,omitempty"`
	// StatusFile is where a pod of the local environment reports its UID
	// and its service's restart count (in a cluster, the pod's status).
	StatusFile string `json:"statusFile,omitempty"`
	// RootDir is where a pod of the local environment has its file system
	// (in a cluster, the pod itself, through exec).
	RootDir string `json:"rootDir,omitempty"`
	// SidecarStatusFile is where the sidecar of a pod of the local
	// environment reports itself (its restart count), as a kubelet
	// reports the container secrets; writing a new value into
	// SidecarRestartFile restarts the sidecar, as `kill 1` in that
	// container does in a cluster.
	SidecarStatusFile  string `json:"sidecarStatusFile,omitempty"`
	SidecarRestartFile string `json:"sidecarRestartFile,omitempty"`
	// UID and Container are a cluster pod's UID and the container of its
	// service, whose restart count the pod's status reports.
	UID       string `json:"uid,omitempty"`
	Container string `json:"container,omitempty"`
	// ByName dials a Service by its name (Name), as a pod of the cluster
	// resolves it, rather than its address: a runner inside the cluster.
	ByName bool `json:"byName,omitempty"`
	// Forwarded maps a port of the endpoint to the loopback address where
	// a port-forward reaches it, for a cluster seen from outside; only
	// these ports are reachable then.
	Forwarded map[int]string `json:"forwarded,omitempty"`
	// Unreachable says why the ports of the endpoint that no port-forward
	// reaches are unreachable (all of them, or a Service's ports with no
	// ready pod behind them).
	Unreachable string `json:"unreachable,omitempty"`
}

// Dial returns where to connect for a port of the endpoint: its
// port-forward, or its own address. It is false for a port that no
// port-forward reaches.
func (e Endpoint) Dial(port int) (string, bool) {
	if e.Forwarded != nil {
		addr, ok := e.Forwarded[port]
		return addr, ok
	}
	if e.ByName {
		return net.JoinHostPort(e.Name, strconv.Itoa(port)), true
	}
	return net.JoinHostPort(e.Address, strconv.Itoa(port)), true
}

// LDAP is the coordinates of the ldap contract, as a reader gets them.
// Role, Host, CAFile and BindPasswordFile are the node's
// (fediversity.lldap.*): Reconcile fills them, and an inventory that gives
// them must give the node's values. The files are the node's paths, which
// a reader in the main pod opens: the runner reads them in the main pod.
type LDAP struct {
	// Role is the role that serves the directory: the role whose service
	// is lldap.
	Role string `json:"role,omitempty"`
	// Host is the contract's host (fediversity.lldap.host): the name of
	// the role's Service, which the certificate must be valid for.
	Host string `json:"host,omitempty"`
	// Port is the LDAPS port, on the Service and the pods.
	Port int `json:"port"`
	// PlainPort is the plain LDAP port of the pods, which must not be on
	// the Service; 0 when the pods have none.
	PlainPort int `json:"plainPort,omitempty"`
	// CAFile is the CA file that the contract returns
	// (fediversity.lldap.tls.caFile), a path in the main pod.
	CAFile string `json:"caFile,omitempty"`
	// BaseDN is the directory's base.
	BaseDN string `json:"baseDN"`
	// BindDN and BindPasswordFile are the reader's credentials; the file
	// (fediversity.lldap.readerBindPasswordFile) is a path in the main
	// pod.
	BindDN           string `json:"bindDN"`
	BindPasswordFile string `json:"bindPasswordFile,omitempty"`
	// User is a user the reader must find; default authelia-bind.
	User string `json:"user,omitempty"`
	// Group is a group with members the reader must find, if set.
	Group string `json:"group,omitempty"`
	// PublishedRoles is the KV v2 entry (secret/data/...) where the main
	// pod's lldap-publish-roles writes the members of Group: one field
	// named after the group, the members' user names joined by commas.
	// The spec names neither; set where the deployment publishes them.
	PublishedRoles string `json:"publishedRoles,omitempty"`
	// HTTPPort is lldap's HTTP port, and AdminUser and AdminPasswordFile
	// a user that logs in there; only where the role runs lldap.
	HTTPPort          int    `json:"httpPort,omitempty"`
	AdminUser         string `json:"adminUser,omitempty"`
	AdminPasswordFile string `json:"adminPasswordFile,omitempty"`
}

// Authelia is what the node states of its authelia role
// (fediversity.authelia.*): the main pod's nginx connects to Host over
// HTTPS and verifies its certificate against CAFile, a path in the main
// pod. Reconcile fills it from the node.
type Authelia struct {
	Role   string `json:"role,omitempty"`
	Host   string `json:"host,omitempty"`
	CAFile string `json:"caFile,omitempty"`
}

// Postgres is the database out of the pods.
type Postgres struct {
	// Role is the role whose data it holds.
	Role string `json:"role"`
	// URLSecret is the file of the role's secrets (a name of
	// fediversity.podRoles.roles.<r>.secrets) that holds the URL the
	// role connects with; empty, the role's one secret whose template
	// holds a postgres:// URL. The suite reads it in the role's pods, as
	// the role does: the database and credential the role really uses.
	URLSecret string `json:"urlSecret,omitempty"`
	// Schema is the schema of the companion's OpenTofu state.
	Schema string `json:"schema,omitempty"`
	// UsersTable is a table of the role's data that holds LDAP.User.
	UsersTable string `json:"usersTable,omitempty"`
}

// OpenBao is where the roles' secrets come from.
type OpenBao struct {
	Address   string `json:"address"`
	TokenFile string `json:"tokenFile"`
	CAFile    string `json:"caFile,omitempty"`
	// RenderInterval is how often the pods' agents render a secret that
	// has no lease (a KV entry), as their static_secret_render_interval
	// says; the agent's default, 5m, when empty. A scenario that waits to
	// see that nothing restarts must wait this long: a render that would
	// restart something may come that late.
	RenderInterval string `json:"renderInterval,omitempty"`
}

// DefaultRenderInterval is the OpenBao agent's own
// static_secret_render_interval.
const DefaultRenderInterval = 5 * time.Minute

// Render is how often the agents render a KV secret.
func (o *OpenBao) Render() time.Duration {
	if o == nil || o.RenderInterval == "" {
		return DefaultRenderInterval
	}
	d, err := time.ParseDuration(o.RenderInterval)
	if err != nil || d <= 0 {
		return DefaultRenderInterval // Validate refuses it
	}
	return d
}

// Portal is the authelia portal.
type Portal struct {
	// URL is the portal's public URL, e.g. https://auth.example.com.
	URL string `json:"url"`
	// Address, when set, is where to connect for the URL's host (a
	// local environment has no DNS for it).
	Address string `json:"address,omitempty"`
	// CAFile verifies the portal's certificate; the system's CAs when
	// empty.
	CAFile string `json:"caFile,omitempty"`
	// StorageDSNFile holds a connection string to authelia's database,
	// to read what a login stored there.
	StorageDSNFile string `json:"storageDSNFile,omitempty"`
}

// Load reads an inventory, takes what the node states from node (or, when
// node is nil, from the inventory's factsFile) and checks the whole.
// Relative file paths in it are taken from the inventory's folder.
func Load(path string, node *facts.Node) (*Inventory, error) {
	inv, err := LoadBase(path)
	if err != nil {
		return nil, err
	}
	if err := inv.FromNode(node); err != nil {
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	if err := inv.Validate(); err != nil {
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	return inv, nil
}

// LoadBase reads an inventory that a cluster discovery completes: its
// roles may be missing, since the discovery finds them, and the node is
// the discovery's; Reconcile and Validate run on the whole.
func LoadBase(path string) (*Inventory, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("inventory %s: no such file", path)
		}
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	return ParseBase(data, path)
}

// ParseBase is LoadBase of data read from path, for a caller that keeps
// the bytes it read.
func ParseBase(data []byte, path string) (*Inventory, error) {
	inv, err := parse(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("inventory %s: %w", path, err)
	}
	return inv, nil
}

// FromNode reconciles the inventory with node, or with the node of its
// factsFile when node is nil.
func (inv *Inventory) FromNode(node *facts.Node) error {
	if inv.Node == "" {
		return fmt.Errorf("node: the node's name is missing")
	}
	if node == nil {
		if inv.FactsFile == "" {
			return fmt.Errorf("factsFile: missing, and no node's sources given: the node's facts (podroles facts) are the truth of its ldap contract, authelia and the roles' secrets")
		}
		doc, err := facts.ReadFile(inv.FactsFile)
		if err != nil {
			return fmt.Errorf("factsFile: %w", err)
		}
		var names []string
		for _, n := range doc.Nodes {
			if n.Name == inv.Node {
				node = n
			}
			names = append(names, n.Name)
		}
		if node == nil {
			return fmt.Errorf("factsFile: %s has no node %s (it has %s)", inv.FactsFile, inv.Node, strings.Join(names, ", "))
		}
	}
	return inv.Reconcile(node)
}

// Parse reads an inventory from YAML (or JSON), reconciles it with node
// (or its factsFile's) and checks it; dir is the folder that relative file
// paths start from.
func Parse(data []byte, dir string, node *facts.Node) (*Inventory, error) {
	inv, err := parse(data, dir)
	if err != nil {
		return nil, err
	}
	if err := inv.FromNode(node); err != nil {
		return nil, err
	}
	if err := inv.Validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

func parse(data []byte, dir string) (*Inventory, error) {
	var inv Inventory
	if err := yaml.UnmarshalStrict(data, &inv); err != nil {
		msg := strings.TrimPrefix(err.Error(), "error unmarshaling JSON: while decoding JSON: ")
		if strings.Contains(msg, `unknown field "dsnFile"`) {
			// A runner's own connection judged the runner's database.
			msg = "postgres.dsnFile: no longer read: the postgres suite reads the database URL in the role's pods, from the secret the role reads it from (postgres.urlSecret names it when the node's templates do not)"
		}
		return nil, fmt.Errorf("%s", msg)
	}
	inv.resolve(dir)
	return &inv, nil
}

// Write writes the inventory as YAML.
func (inv *Inventory) Write(path string) error {
	data, err := yaml.Marshal(inv)
	if err != nil {
		return err
	}
	header := "# The world of node " + inv.Node + " for podroles scenarios; see docs/inventory.md in podroles.\n"
	return os.WriteFile(path, append([]byte(header), data...), 0o644)
}

func (inv *Inventory) resolve(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	abs(&inv.FactsFile)
	if l := inv.LDAP; l != nil {
		// CAFile and BindPasswordFile are paths in the main pod.
		abs(&l.AdminPasswordFile)
		if l.User == "" {
			l.User = "authelia-bind"
		}
	}
	if o := inv.OpenBao; o != nil {
		abs(&o.TokenFile)
		abs(&o.CAFile)
	}
	if p := inv.Portal; p != nil {
		abs(&p.CAFile)
		abs(&p.StorageDSNFile)
	}
	if c := inv.Cluster; c != nil {
		abs(&c.Kubeconfig)
	}
	for _, r := range inv.Roles {
		if r == nil {
			continue
		}
		for i := range r.Pods {
			abs(&r.Pods[i].SecretsDir)
			abs(&r.Pods[i].StatusFile)
			abs(&r.Pods[i].RootDir)
			abs(&r.Pods[i].SidecarStatusFile)
			abs(&r.Pods[i].SidecarRestartFile)
		}
	}
}

// Validate checks the inventory and names the first field that is wrong.
func (inv *Inventory) Validate() error {
	if inv.Node == "" {
		return fmt.Errorf("node: the node's name is missing")
	}
	if len(inv.Roles) == 0 && inv.Cluster == nil {
		return fmt.Errorf("roles: no roles")
	}
	if c := inv.Cluster; c != nil {
		if c.Namespace == "" {
			return fmt.Errorf("cluster.namespace: missing")
		}
		// No kubeconfig: the pod's service account (--in-cluster).
		if c.Kubeconfig != "" {
			if err := fileExists("cluster.kubeconfig", c.Kubeconfig); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inv.Roles)) {
		r := inv.Roles[name]
		at := "roles." + name
		if r == nil {
			return fmt.Errorf("%s: empty role", at)
		}
		if r.Service != nil {
			if err := r.Service.validate(at + ".service"); err != nil {
				return err
			}
		}
		if len(r.Pods) == 0 && inv.Cluster == nil {
			// In a cluster, the deployments suite tells why.
			return fmt.Errorf("%s.pods: the role has no pods", at)
		}
		for i, p := range r.Pods {
			if err := p.validate(fmt.Sprintf("%s.pods[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	if l := inv.LDAP; l != nil {
		r, ok := inv.Roles[l.Role]
		switch {
		case !ok:
			return fmt.Errorf("ldap.role: %q is no role of the inventory", l.Role)
		case r.Service == nil:
			return fmt.Errorf("roles.%s.service: the role that serves LDAP has no Service", l.Role)
		case l.Host == "":
			return fmt.Errorf("ldap.host: the contract's host (the Service name) is missing")
		case l.Port < 1 || l.Port > 65535:
			return fmt.Errorf("ldap.port: %d is no port", l.Port)
		case l.BaseDN == "" || l.BindDN == "":
			return fmt.Errorf("ldap.baseDN and ldap.bindDN: both are needed")
		}
		for field, f := range map[string]string{"ldap.caFile": l.CAFile, "ldap.bindPasswordFile": l.BindPasswordFile} {
			if !path.IsAbs(f) {
				return fmt.Errorf("%s: %q is no absolute path in the node's pods", field, f)
			}
		}
	}
	if p := inv.Postgres; p != nil {
		if _, ok := inv.Roles[p.Role]; !ok {
			return fmt.Errorf("postgres.role: %q is no role of the inventory", p.Role)
		}
		if p.URLSecret != "" {
			if _, ok := inv.Roles[p.Role].Secrets[p.URLSecret]; !ok && inv.Roles[p.Role].Secrets != nil {
				return fmt.Errorf("postgres.urlSecret: %q is no secret of role %s (fediversity.podRoles.roles.%s.secrets)", p.URLSecret, p.Role, p.Role)
			}
		}
	}
	if o := inv.OpenBao; o != nil {
		if o.Address == "" {
			return fmt.Errorf("openbao.address: missing")
		}
		if err := fileExists("openbao.tokenFile", o.TokenFile); err != nil {
			return err
		}
		if o.RenderInterval != "" {
			if d, err := time.ParseDuration(o.RenderInterval); err != nil || d <= 0 {
				return fmt.Errorf("openbao.renderInterval: %q is no duration, e.g. 2s or 5m", o.RenderInterval)
			}
		}
	}
	if p := inv.Portal; p != nil && p.URL == "" {
		return fmt.Errorf("portal.url: missing")
	}
	if r := inv.Rotation; r != nil {
		refs := map[string]*SecretRef{"rotation.restart": r.Restart, "rotation.noRestart": r.NoRestart, "rotation.readerPassword": r.ReaderPassword}
		for _, field := range slices.Sorted(maps.Keys(refs)) {
			ref := refs[field]
			if ref == nil {
				continue
			}
			role, ok := inv.Roles[ref.Role]
			if !ok {
				return fmt.Errorf("%s.role: %q is no role of the inventory", field, ref.Role)
			}
			if _, ok := role.Secrets[ref.File]; !ok {
				return fmt.Errorf("%s.file: role %s has no secret %q", field, ref.Role, ref.File)
			}
		}
	}
	return nil
}

func (e Endpoint) validate(at string) error {
	if e.Name == "" {
		return fmt.Errorf("%s.name: missing", at)
	}
	if _, err := netip.ParseAddr(e.Address); err != nil {
		return fmt.Errorf("%s.address: %q is not an IP address", at, e.Address)
	}
	for _, name := range slices.Sorted(maps.Keys(e.Ports)) {
		if p := e.Ports[name]; p < 1 || p > 65535 {
			return fmt.Errorf("%s.ports.%s: %d is no port", at, name, p)
		}
	}
	return nil
}

func fileExists(field, path string) error {
	if path == "" {
		return fmt.Errorf("%s: missing", field)
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: %s: no such file", field, path)
	}
	return nil
}

// ReadSecret reads a secret from a file, less its final line end.
func ReadSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// PodStatus is what a pod of the local environment reports about its
// service, as a kubelet reports a container: the pod's UID, which stays
// while the pod lives, and the service's restart count.
type PodStatus struct {
	Pod          string    `json:"pod"`
	UID          string    `json:"uid"`
	RestartCount int       `json:"restartCount"`
	ServicePID   int       `json:"servicePID"`
	StartedAt    time.Time `json:"startedAt"`
	// Running says the service runs now: started, and not stopping.
	Running bool `json:"running,omitempty"`
	// Exits counts the service's exits in this pod: its restarts, and
	// an exit not restarted yet (a container waiting in the kubelet's
	// crash-loop back-off). ExitCount reads it.
	Exits int `json:"exits,omitempty"`
	// LastExit is the service's last exit in this pod, if any.
	LastExit *Exit `json:"lastExit,omitempty"`
	// BackOff is how long the kubelet waits to start an exited container
	// again, when it says so.
	BackOff time.Duration `json:"backOff,omitempty"`
}

// ExitCount is how often the service exited in this pod. A status that
// does not count exits counts them as restarts.
func (s *PodStatus) ExitCount() int { return max(s.Exits, s.RestartCount) }

// AwaitsRestart says the service's last exit is not restarted yet: the
// container ended, and the kubelet has not started it again.
func (s *PodStatus) AwaitsRestart() bool { return !s.Running && s.Exits > s.RestartCount }

// Exit is one end of a service's run, as a kubelet records a terminated
// container.
type Exit struct {
	Code       int       `json:"code"`
	Reason     string    `json:"reason,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt"`
	// Message is what the container said of its end (the kubelet's
	// termination message): the pod supervisor writes why it exits,
	// RestartMessage or a service's exit. Empty where nothing said.
	Message string `json:"message,omitempty"`
	// StoppedBy is the kubelet's word that it stopped the container
	// during this run (its event Killing: a failed liveness or startup
	// probe, a changed spec), where the exit says nothing of itself.
	StoppedBy string `json:"stoppedBy,omitempty"`
}

// RestartMessagePrefix starts the termination message of an exit for
// secrets with restart: "restart: a new value of FILE, FILE".
const RestartMessagePrefix = "restart: a new value of "

// RestartFor is the files an exit says it restarted for, and whether it
// says so.
func (e *Exit) RestartFor() ([]string, bool) {
	if e == nil {
		return nil, false
	}
	files, ok := strings.CutPrefix(e.Message, RestartMessagePrefix)
	if !ok {
		return nil, false
	}
	return strings.Split(files, ", "), true
}

// Killed says whether the exit was a kill from outside the container
// (the kernel's OOM killer; SIGKILL, the kubelet's once a stop's grace
// ran out; a stop the kubelet says it made), which no method makes for a
// restart.
func (e *Exit) Killed() bool {
	return e != nil && (e.Reason == "OOMKilled" || e.Code == 137 || e.StoppedBy != "") // 128 + SIGKILL
}

// String names the exit for a report.
func (e *Exit) String() string {
	if e == nil {
		return "no exit recorded"
	}
	s := fmt.Sprintf("exit code %d", e.Code)
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	s += " at " + e.FinishedAt.UTC().Format(time.TimeOnly)
	if e.Message != "" {
		s += fmt.Sprintf(", saying %q", e.Message)
	}
	if e.StoppedBy != "" {
		s += ", stopped by the kubelet: " + e.StoppedBy
	}
	return s
}

// ReadPodStatus reads a pod's status file.
func ReadPodStatus(path string) (*PodStatus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s PodStatus
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
