// Package facts is the model of what podroles reads from a node. It
// holds the typed projection of the node surface (the Nix paths that
// docs/node-surface.md fixes), the facts document that carries it
// between processes, and the parser that reads that document back and
// names the Nix option of any value of the wrong type.
//
// Every part of podroles reads nodes through this package: the rules, the
// plan and the scenario runner. Only package nixeval runs nix to fill it.
package facts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FactsVersion is the version of the facts document that this package reads
// and writes. It changes only when a field changes meaning or disappears;
// new fields are added without a new version.
const FactsVersion = 1

// Document is what `podroles facts` prints and `--facts` reads back.
type Document struct {
	Version int     `json:"version"`
	Nodes   []*Node `json:"nodes"`
}

// Node is the projection of one node's config. JSON field names follow the
// Nix option they come from; the comments name that option.
type Node struct {
	// Name is the attribute name under nixosConfigurations, or for a file
	// networking.hostName, else the file's base name.
	Name string `json:"name"`
	// Source says where the node came from, e.g. "file:examples/x.nix".
	Source string `json:"source"`
	// NamedAfterFile is true when the name is a file's base name, for a
	// file that sets no networking.hostName: the name was made up, and
	// no rule holds it against the node.
	NamedAfterFile bool `json:"namedAfterFile,omitempty"`

	// Units is systemd.services: every unit of the node by name.
	Units map[string]Unit `json:"units"`
	// ModularServices is the names of system.services.
	ModularServices []string `json:"modularServices"`
	// StateMigrations is the names of systemd.stateMigrations.
	StateMigrations []string `json:"stateMigrations"`

	Firewall Firewall `json:"firewall"`
	PodRoles PodRoles `json:"podRoles"`
	K8sPod   K8sPod   `json:"k8sPod"`
	LLDAP    LLDAP    `json:"lldap"`
	Authelia Authelia `json:"authelia"`

	// NotData are the values of the roles' settings (and of the services'
	// companion programs, which the plan carries) that are no data
	// (FR-002). Such a value comes out of extraction as null, or a path
	// or a string of the store as its bare string, so that nothing is
	// built or copied for it.
	NotData []NotData `json:"notData,omitempty"`

	// ListsProbe is what the FR-007 probe found on a node of the module
	// system; nil for a node it cannot probe (a plain config, facts
	// written by an older podroles).
	ListsProbe *ListsProbe `json:"listsProbe,omitempty"`

	// Definitions are where the node defines what some option references
	// name, read when the facts were: the facts that lib.mkCheck and the
	// node module write carry those that findings on the names in the
	// lists would ask about, for a check of facts, which has no nix to
	// ask. Empty for a clean node, and in the facts podroles facts writes.
	Definitions []Located `json:"definitions,omitempty"`
}

// Located is what an OptionRef names, and where the node defines it.
type Located struct {
	OptionRef
	Defs []Definition `json:"defs"`
}

// Kinds of values that are no data.
const (
	NotDataFunction   = "function"
	NotDataPath       = "path"
	NotDataDerivation = "derivation"
	NotDataStorePath  = "store path"
)

// NotData is one value of a request that is no data (FR-002).
type NotData struct {
	// Path is the option's path: attribute names as strings, list
	// indexes as ints.
	Path []any `json:"path"`
	// Kind is one of the NotData kinds.
	Kind string `json:"kind"`
}

// Option writes Path as a Nix option path, e.g.
// fediversity.podRoles.roles.lldap.ports[0].port.
func (d NotData) Option() string {
	var b strings.Builder
	for i, e := range d.Path {
		switch e := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", e)
		case string:
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(AttrName(e))
		}
	}
	return b.String()
}

// ListsProbe is the outcome of the FR-007 probe: the node extended with
// systemd.services overridden by a value that throws, and only the lists
// forced. A list that then fails reads config.systemd.services.
type ListsProbe struct {
	// RoleNames is true when the set of roles itself failed.
	RoleNames bool `json:"roleNames"`
	// Roles are the roles whose units failed.
	Roles       []string `json:"roles"`
	MainUnits   bool     `json:"mainUnits"`
	SharedUnits bool     `json:"sharedUnits"`
	// K8sPodModuleSkipped is true when a k8s-pod module was asked for and
	// not applied: with lists that read systemd.services its evaluation is
	// an infinite recursion, so the facts are of the node without it.
	K8sPodModuleSkipped bool `json:"k8sPodModuleSkipped,omitempty"`
}

// Failed reports whether any list failed under the probe.
func (p *ListsProbe) Failed() bool {
	return p != nil && (p.RoleNames || len(p.Roles) > 0 || p.MainUnits || p.SharedUnits)
}

// Unit is systemd.services.<u>.
type Unit struct {
	Enable bool `json:"enable"`
}

// Firewall is networking.firewall.
type Firewall struct {
	Enable bool `json:"enable"`
	PortLists
	// Interfaces is networking.firewall.interfaces: ports open on one
	// interface only.
	Interfaces map[string]PortLists `json:"interfaces"`
}

// PortLists are the four lists of open ports that networking.firewall has at
// its top level and per interface.
type PortLists struct {
	AllowedTCPPorts      []int       `json:"allowedTCPPorts"`
	AllowedUDPPorts      []int       `json:"allowedUDPPorts"`
	AllowedTCPPortRanges []PortRange `json:"allowedTCPPortRanges"`
	AllowedUDPPortRanges []PortRange `json:"allowedUDPPortRanges"`
}

// PortRange is an inclusive range of ports.
type PortRange struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Opens reports whether the lists open port for protocol ("TCP" or "UDP").
func (l PortLists) Opens(protocol string, port int) bool {
	ports, ranges := l.AllowedTCPPorts, l.AllowedTCPPortRanges
	if protocol == ProtocolUDP {
		ports, ranges = l.AllowedUDPPorts, l.AllowedUDPPortRanges
	}
	if slices.Contains(ports, port) {
		return true
	}
	for _, r := range ranges {
		if r.From <= port && port <= r.To {
			return true
		}
	}
	return false
}

// Opens reports whether the firewall lets connections to port through. A
// disabled firewall opens every port, and a port open on any interface counts
// as open: a pod has one interface, and it is not named like the node's.
func (f Firewall) Opens(protocol string, port int) bool {
	if !f.Enable || f.PortLists.Opens(protocol, port) {
		return true
	}
	for _, l := range f.Interfaces {
		if l.Opens(protocol, port) {
			return true
		}
	}
	return false
}

// PodRoles is fediversity.podRoles.
type PodRoles struct {
	Roles       map[string]Role    `json:"roles"`
	MainUnits   []string           `json:"mainUnits"`
	SharedUnits []string           `json:"sharedUnits"`
	Services    map[string]Service `json:"services"`
}

// Role is fediversity.podRoles.roles.<r>.
type Role struct {
	// Replicas is nil when nothing requests the role.
	Replicas *int              `json:"replicas"`
	Units    []string          `json:"units"`
	Service  *string           `json:"service"`
	Secrets  map[string]Secret `json:"secrets"`
	Ports    []Port            `json:"ports"`
	Metrics  *Metrics          `json:"metrics"`
	// Companion asks for a second container from the service's image.
	Companion bool `json:"companion"`
}

// Requested reports whether a request gives the role replicas.
func (r Role) Requested() bool { return r.Replicas != nil }

// RunsService reports whether the role runs the image of modular service s.
func (r Role) RunsService(s string) bool { return r.Service != nil && *r.Service == s }

// RunsNodeImage reports whether the role runs the image of the node rather
// than that of a modular service.
func (r Role) RunsNodeImage() bool { return r.Service == nil }

// Protocols a port may have.
const (
	ProtocolTCP = "TCP"
	ProtocolUDP = "UDP"
)

// Port is one entry of fediversity.podRoles.roles.<r>.ports.
type Port struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

// Metrics is fediversity.podRoles.roles.<r>.metrics.
type Metrics struct {
	Port int    `json:"port"`
	Path string `json:"path"`
}

// Secret is fediversity.podRoles.roles.<r>.secrets.<file>.
type Secret struct {
	// Path is the secret's full path in the KV v2 API; "" when the node
	// left the required option unset.
	Path     string  `json:"path"`
	Field    *string `json:"field"`
	Encoding *string `json:"encoding"`
	Variable *string `json:"variable"`
	Template *string `json:"template"`
	// Parameters are the request's parameters for an engine that issues a
	// value at each read; nil when unset. Values are projected only when
	// they are plain (strings, numbers, booleans, lists of those).
	Parameters map[string]any `json:"parameters"`
	Restart    bool           `json:"restart"`
}

// Service is fediversity.podRoles.services.<s>.
type Service struct {
	// Environment is the names of the variables of the image, sorted.
	Environment []string `json:"environment"`
	// Variables are those variables with their values (FR-011: the image
	// holds them, so they are no secrets). Nil in facts written before
	// podroles read the values: then only the names are known.
	Variables map[string]string `json:"variables"`
	// Companion is the program of the companion container, or nil.
	Companion *string `json:"companion"`
}

// K8sPod is fediversity.k8sPod.
type K8sPod struct {
	Enable        bool     `json:"enable"`
	PlatformUnits []string `json:"platformUnits"`
	// AddedUnits are the units of Units that exist only because the
	// k8s-pod module that podroles applied made them: it puts a condition
	// on every name in the lists, and a condition makes a unit. The node
	// without the module has none of them, so FR-008 does not count them
	// as units of the node. Empty when no module was applied.
	AddedUnits []string `json:"addedUnits,omitempty"`
	// HostModules are the modules that the node imports itself which put
	// it on k8s-pod.nix (they set fediversity.k8sPod.enable) and define
	// units, that the k8s-pod module podroles applied is not (none was
	// given, or another copy), each with the names in the lists that are
	// units only through it. Such a module's conditions make a unit of a
	// misspelled name, so FR-008 could not judge those names. Only modules
	// that hide a name are given; nil on a node of no module system.
	HostModules []HostModule `json:"hostModules,omitempty"`
	// ConditionOnlyUnits are the names in the lists that are units of
	// Units only by a condition: on a node that a module of its own puts
	// on k8s-pod.nix, every definition of the unit sets only what that
	// module's condition sets on a listed name (Condition), and nothing
	// that runs. Such a name is no unit of the node for FR-008.
	ConditionOnlyUnits []string `json:"conditionOnlyUnits,omitempty"`
	// Condition is what the condition of the node's own k8s-pod module
	// sets on a listed name ("unitConfig.ConditionPathExists"), when
	// ConditionOnlyUnits is not empty.
	Condition []string `json:"condition,omitempty"`
}

// HostModule is a k8s-pod module that a node imports itself (see
// K8sPod.HostModules).
type HostModule struct {
	// File is the module's file (of a flake, the checkout's).
	File string `json:"file"`
	// Units are the names in the lists that are units of the node only
	// through this module's definitions.
	Units []string `json:"units"`
}

// LLDAP is fediversity.lldap.
type LLDAP struct {
	Host                   string  `json:"host"`
	ReaderBindPasswordFile *string `json:"readerBindPasswordFile"`
	TLS                    TLS     `json:"tls"`
}

// TLS is fediversity.lldap.tls.
type TLS struct {
	Enable bool    `json:"enable"`
	CAFile *string `json:"caFile"`
}

// Authelia is fediversity.authelia. Of the attribute sets storage.postgres
// and smtp only whether they are set is projected: their contents may hold
// secrets and no rule reads them.
type Authelia struct {
	Host    string          `json:"host"`
	CAFile  *string         `json:"caFile"`
	Storage AutheliaStorage `json:"storage"`
	// SMTP reports whether fediversity.authelia.smtp is set.
	SMTP        bool        `json:"smtp"`
	ForwardAuth ForwardAuth `json:"forwardAuth"`
}

// AutheliaStorage is fediversity.authelia.storage.
type AutheliaStorage struct {
	// Local is storage.local.path, or nil when storage.local is null.
	Local *LocalStorage `json:"local"`
	// Postgres reports whether storage.postgres is set.
	Postgres bool `json:"postgres"`
}

// LocalStorage is fediversity.authelia.storage.local.
type LocalStorage struct {
	Path string `json:"path"`
}

// ForwardAuth is fediversity.authelia.forwardAuth.
type ForwardAuth struct {
	Enable bool `json:"enable"`
}

// HasRequest reports whether any role of the node is requested (FR-008
// applies to such nodes on every method).
func (n *Node) HasRequest() bool {
	for _, r := range n.PodRoles.Roles {
		if r.Requested() {
			return true
		}
	}
	return false
}

// RoleNames returns the node's role names in sorted order, so that whatever
// iterates over roles does it in a stable order.
func (n *Node) RoleNames() []string { return slices.Sorted(maps.Keys(n.PodRoles.Roles)) }

// UniqueNames returns names without repeats, in their first order: a unit
// named twice in a list is still one unit.
func UniqueNames(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := []string{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
