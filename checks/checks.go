// Package checks applies the evaluation rules of the pod-roles spec to the
// facts of nodes. Every rule is a small pure function with a stable ID, the
// spec items it enforces and a one-line doc; it reads facts and never runs a
// process, so it costs next to nothing beside the nix evaluation before it.
package checks

import (
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/report"
)

// Severity of a finding: errors refuse the node, warnings do not unless the
// caller is strict.
type Severity string

// The severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// SubjectKind is what a finding is about.
type SubjectKind string

// The kinds of subjects.
const (
	SubjectNode    SubjectKind = "node"
	SubjectUnit    SubjectKind = "unit"
	SubjectRole    SubjectKind = "role"
	SubjectSecret  SubjectKind = "secret"
	SubjectService SubjectKind = "service"
	SubjectPort    SubjectKind = "port"
	// SubjectOption is a Nix option, named by its path: a list that reads
	// what it must not, a value that is no data.
	SubjectOption SubjectKind = "option"
)

// Subject names the unit, role, secret, service or port of a finding.
type Subject struct {
	Kind SubjectKind `json:"kind"`
	Name string      `json:"name"`
}

// String names the subject for a line of text: a name with a control
// character is quoted.
func (s Subject) String() string { return fmt.Sprintf("%s %s", s.Kind, report.Name(s.Name)) }

// Finding is one breach of a rule.
type Finding struct {
	Rule     string   `json:"rule"`
	Spec     string   `json:"spec"`
	Severity Severity `json:"severity"`
	Node     string   `json:"node"`
	Subject  Subject  `json:"subject"`
	Message  string   `json:"message"`
	// Location is where the node defines what the finding is about, once
	// Locate found it; nil where nix cannot know it.
	Location *facts.Location `json:"location,omitempty"`
	// Notes are further places that bear on the finding: other
	// definitions of the same value, and those whose priority lost.
	Notes []Note `json:"notes,omitempty"`

	// place is what the finding is about, for Locate.
	place place
}

// Note is a further place of a finding, and what it is.
type Note struct {
	Message  string          `json:"message"`
	Location *facts.Location `json:"location,omitempty"`
}

// Scope says on which nodes a rule applies. FR-013: off the k8s method only
// the FR-008 rules apply, to a node with a request; the rules on input that
// no method could deploy go with them. With no request and off k8s-pod.nix
// nothing applies (US1-5: the node does not change).
type Scope int

// The scopes.
const (
	// ScopeRequest rules apply to a node with a request, on every method,
	// and to every node on k8s-pod.nix.
	ScopeRequest Scope = iota
	// ScopeK8s rules apply only to a node on k8s-pod.nix.
	ScopeK8s
)

// Rule is one evaluation rule.
type Rule struct {
	// ID is stable: scripts and suppressions may name it.
	ID string
	// Name is a short slug, for people.
	Name string
	// Spec lists the spec items the rule enforces.
	Spec string
	// Doc is one line: what the rule refuses.
	Doc      string
	Severity Severity
	Scope    Scope
	check    func(n *node, report reportFunc)
	// needs, when set, says why the rule cannot judge a node in its scope
	// (e.g. the FR-007 probe needs the module system), or "".
	needs func(n *facts.Node) string
}

// reportFunc records a finding of the rule being run: its subject, the
// definitions it is about (for its location), and its message.
type reportFunc func(subject Subject, where place, format string, args ...any)

// applies reports whether the rule runs on n, and if not, why not.
func (r *Rule) applies(n *node) (bool, string) {
	switch r.Scope {
	case ScopeRequest:
		if !n.K8sPod.Enable && !n.HasRequest() {
			return false, "FR-008: the node has no request and is not on k8s-pod.nix"
		}
	case ScopeK8s:
		if !n.K8sPod.Enable {
			return false, "FR-013: the node is not on k8s-pod.nix (fediversity.k8sPod.enable is false)"
		}
	}
	if r.needs != nil {
		if why := r.needs(n.Node); why != "" {
			return false, why
		}
	}
	return true, ""
}

// Skip is a rule that did not run on a node, and why.
type Skip struct {
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// Result is what the rules found on one node.
type Result struct {
	Node     string    `json:"node"`
	Source   string    `json:"source"`
	K8sPod   bool      `json:"k8sPod"`
	RulesRun []string  `json:"rulesRun"`
	Skipped  []Skip    `json:"rulesSkipped"`
	Findings []Finding `json:"findings"`
}

// Count returns the number of errors and warnings.
func (r *Result) Count() (errors, warnings int) {
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			errors++
		} else {
			warnings++
		}
	}
	return errors, warnings
}

// Check runs every rule on every node. The nodes are checked together: a
// rule may compare each with the others (PR614).
func Check(nodes []*facts.Node) []*Result {
	others := fleetOf(nodes)
	results := make([]*Result, 0, len(nodes))
	for _, n := range nodes {
		results = append(results, checkNode(n, Rules(), others))
	}
	return results
}

// CheckNode runs rules on one node, checked alone. Findings come sorted by
// rule, subject and message, so that the same node always reads the same.
func CheckNode(nf *facts.Node, rules []*Rule) *Result {
	return checkNode(nf, rules, nil)
}

// checkNode runs rules on one node of those that others indexes.
func checkNode(nf *facts.Node, rules []*Rule, others fleet) *Result {
	n := index(nf)
	n.fleet = others
	defer n.release()
	res := &Result{Node: n.Name, Source: n.Source, K8sPod: n.K8sPod.Enable, RulesRun: []string{}, Skipped: []Skip{}, Findings: []Finding{}}
	for _, r := range rules {
		if ok, why := r.applies(n); !ok {
			res.Skipped = append(res.Skipped, Skip{Rule: r.ID, Reason: why})
			continue
		}
		res.RulesRun = append(res.RulesRun, r.ID)
		r.check(n, func(subject Subject, where place, format string, args ...any) {
			// Where nix can place nothing, the node's own file.
			where.first = append(slices.Clip(where.first), facts.OptionRef{})
			res.Findings = append(res.Findings, Finding{
				Rule: r.ID, Spec: r.Spec, Severity: r.Severity, Node: n.Name,
				Subject: subject, Message: fmt.Sprintf(format, args...), place: where,
			})
		})
	}
	sort.SliceStable(res.Findings, func(i, j int) bool {
		a, b := res.Findings[i], res.Findings[j]
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.Subject != b.Subject {
			return a.Subject.Kind < b.Subject.Kind || a.Subject.Kind == b.Subject.Kind && a.Subject.Name < b.Subject.Name
		}
		return a.Message < b.Message
	})
	return res
}

// unitList is one of the lists that give units a place: a role's units,
// mainUnits or sharedUnits.
type unitList struct {
	// label names the list for people: "role sidekiq", "mainUnits".
	label string
	// option is the Nix option that holds the list.
	option string
	// path is option as attribute names.
	path  []string
	units []string
}

// holding is the definition of the list that holds name.
func (l unitList) holding(name string) facts.OptionRef {
	return facts.OptionRef{Path: l.path, Holds: name}
}

// node is a node's facts with the indexes that several rules share, built
// once per node. A node may have thousands of units: the index touches each
// name once in a map and nothing sorts them (findings are sorted once at
// the end).
type node struct {
	*facts.Node
	roles []string
	lists []unitList
	// units are the node's units, each with the first list that names it.
	units   []unitInfo
	unitIdx map[string]int32
	// unknownFirst maps a listed name that is no unit to its first list.
	unknownFirst map[string]int
	// inMany maps a name that several lists name to their labels.
	inMany map[string][]string
	// unknown are the names in lists that are no unit of the node, in
	// list order, each once per list.
	unknown []listedName
	// fleet is the Deployments of the nodes checked with this one.
	fleet fleet
}

// unitInfo is a unit and the first list that names it, or -1.
type unitInfo struct {
	name      string
	enable    bool
	firstList int
	// added is true for a unit that only the k8s-pod module made, or
	// that only a condition defines (a condition on a name in a list): a
	// unit on k8s-pod.nix (FR-014), but not one of the node (FR-008).
	added bool
}

// listedName is a name in the list of index list.
type listedName struct {
	list int
	name string
}

// indexes keeps the maps of nodes checked before: a large node's index
// costs more to allocate and collect than to fill.
var indexes = sync.Pool{New: func() any {
	return &node{unitIdx: map[string]int32{}, inMany: map[string][]string{}, unknownFirst: map[string]int{}}
}}

// release returns n's index for reuse; n must not be used after.
func (n *node) release() {
	clear(n.unitIdx)
	clear(n.inMany)
	clear(n.unknownFirst)
	clear(n.units[:cap(n.units)])
	n.Node, n.roles, n.lists, n.units, n.unknown, n.fleet = nil, nil, n.lists[:0], n.units[:0], nil, nil
	indexes.Put(n)
}

func index(nf *facts.Node) *node {
	n := indexes.Get().(*node)
	n.Node, n.roles = nf, nf.RoleNames()
	for _, r := range n.roles {
		n.lists = append(n.lists, list("role "+r, nf.PodRoles.Roles[r].Units, rolePath(r, "units")...))
	}
	n.lists = append(n.lists,
		list("mainUnits", nf.PodRoles.MainUnits, podRolesPath("mainUnits")...),
		list("sharedUnits", nf.PodRoles.SharedUnits, podRolesPath("sharedUnits")...),
	)
	n.units = slices.Grow(n.units, len(nf.Units))
	for name, u := range nf.Units {
		n.unitIdx[name] = int32(len(n.units))
		n.units = append(n.units, unitInfo{name: name, enable: u.Enable, firstList: -1})
	}
	for _, added := range [][]string{nf.K8sPod.AddedUnits, nf.K8sPod.ConditionOnlyUnits} {
		for _, name := range added {
			if idx, ok := n.unitIdx[name]; ok {
				n.units[idx].added = true
			}
		}
	}
	for i, l := range n.lists {
		for _, name := range l.units {
			first := -1
			idx, isUnit := n.unitIdx[name]
			exists := isUnit && !n.units[idx].added
			if exists {
				first = n.units[idx].firstList
			} else if f, ok := n.unknownFirst[name]; ok {
				first = f
			}
			switch {
			case first < 0:
				if exists {
					n.units[idx].firstList = i
				} else {
					n.unknownFirst[name] = i
					n.unknown = append(n.unknown, listedName{i, name})
					if isUnit {
						n.units[idx].firstList = i
					}
				}
				continue
			case first == i || slices.Contains(n.inMany[name], l.label):
				continue // named twice in one list: still one list
			}
			if !exists {
				n.unknown = append(n.unknown, listedName{i, name})
			}
			if n.inMany[name] == nil {
				n.inMany[name] = []string{n.lists[first].label}
			}
			n.inMany[name] = append(n.inMany[name], l.label)
		}
	}
	return n
}

func list(label string, units []string, path ...string) unitList {
	return unitList{label: label, option: facts.OptionPath(path...), path: path, units: units}
}

// listLabelled returns the list with label.
func (n *node) listLabelled(label string) unitList {
	for _, l := range n.lists {
		if l.label == label {
			return l
		}
	}
	return unitList{label: label}
}

// eachRole calls f for each role in name order.
func (n *node) eachRole(f func(name string, r facts.Role)) {
	for _, name := range n.roles {
		f(name, n.PodRoles.Roles[name])
	}
}

// eachSecret calls f for each secret of each role, in order.
func (n *node) eachSecret(f func(role, file string, s facts.Secret)) {
	n.eachRole(func(role string, r facts.Role) {
		for _, file := range slices.Sorted(maps.Keys(r.Secrets)) {
			f(role, file, r.Secrets[file])
		}
	})
}

// rolesRunning returns the roles that run modular service s.
func (n *node) rolesRunning(s string) []string {
	var out []string
	n.eachRole(func(name string, r facts.Role) {
		if r.RunsService(s) {
			out = append(out, name)
		}
	})
	return out
}

// joinAnd joins names as "a, b and c".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func option(path string) Subject  { return Subject{SubjectOption, path} }
func role(name string) Subject    { return Subject{SubjectRole, name} }
func unit(name string) Subject    { return Subject{SubjectUnit, name} }
func secret(name string) Subject  { return Subject{SubjectSecret, name} }
func service(name string) Subject { return Subject{SubjectService, name} }

func (s Scope) String() string {
	if s == ScopeK8s {
		return "nodes on k8s-pod.nix"
	}
	return "nodes with a request, or on k8s-pod.nix"
}

// Func is the function that judges nodes for the rule: its file and its
// name in package checks, as docs/rules.md links them.
func (r *Rule) Func() (file, name string) {
	f := runtime.FuncForPC(reflect.ValueOf(r.check).Pointer())
	file, _ = f.FileLine(f.Entry())
	_, name, _ = strings.Cut(f.Name(), "/checks.")
	// A closure, as autheliaCheck makes, is named by its maker:
	// "autheliaCheck.func1", or "init.autheliaCheck.func7" where the
	// compiler inlined the maker into the package's initialization.
	parts := strings.Split(name, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if p := parts[i]; p != "init" && p != "glob" && !strings.HasPrefix(p, "func") {
			return file, p
		}
	}
	return file, name
}
