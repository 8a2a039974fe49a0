package facts

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// ParseDocument reads a facts document ({"version": 1, "nodes": [...]}).
// A node whose value has the wrong type fails it whole.
func ParseDocument(data []byte) (*Document, error) {
	doc, bad, err := ParseDocumentEach(data)
	if err == nil && len(bad) > 0 {
		return nil, bad[0]
	}
	return doc, err
}

// ParseDocumentEach reads a facts document as ParseDocument does, but a
// node whose value has the wrong type is left out of it and returned
// beside it: one such node must not hide the others. The error is of the
// document as a whole.
func ParseDocumentEach(data []byte) (*Document, []*NodeParseError, error) {
	if !gjson.ValidBytes(data) {
		return nil, nil, fmt.Errorf("not valid JSON")
	}
	if !utf8.Valid(data) {
		return nil, nil, fmt.Errorf("not valid UTF-8: names and paths must be text")
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil, nil, fmt.Errorf("want a facts document {\"version\": %d, \"nodes\": [...]}, got %s", FactsVersion, describe(root))
	}
	version := root.Get("version")
	if !version.Exists() {
		return nil, nil, fmt.Errorf("no \"version\": want a facts document {\"version\": %d, \"nodes\": [...]}", FactsVersion)
	}
	if version.Raw != strconv.Itoa(FactsVersion) {
		return nil, nil, fmt.Errorf("facts version %s: this podroles reads version %d only", version.Raw, FactsVersion)
	}
	nodes, bad, err := ParseNodesEach(root.Get("nodes"), "nodes")
	if err != nil {
		return nil, nil, err
	}
	return &Document{Version: FactsVersion, Nodes: nodes}, bad, nil
}

// NodeParseError is a node of a list whose value has the wrong type.
type NodeParseError struct {
	// Where and Index place the node in its list ("nodes", 2).
	Where string
	Index int
	// Node and Source are the node's name and source, where they could
	// be read ("" otherwise).
	Node, Source string
	// Option is the path of the option whose value is wrong, for a
	// report to place the error at its definition; nil when none is.
	Option []string
	Err    error
}

func (e *NodeParseError) Error() string {
	if e.Node != "" {
		return fmt.Sprintf("node %s: %s", e.Node, e.Err)
	}
	return fmt.Sprintf("%s[%d]: %s", e.Where, e.Index, e.Err)
}

func (e *NodeParseError) Unwrap() error { return e.Err }

// ParseNodes reads a JSON list of nodes: the "nodes" of a document, or the
// whole output of extract.nix. A node whose value has the wrong type
// fails it whole.
func ParseNodes(list gjson.Result, where string) ([]*Node, error) {
	nodes, bad, err := ParseNodesEach(list, where)
	switch {
	case err != nil:
		return nil, err
	case len(bad) > 0:
		return nil, bad[0]
	}
	return nodes, nil
}

// ParseNodesEach reads a JSON list of nodes as ParseNodes does, but
// returns the nodes whose values have the wrong type apart, in the list's
// order, and the others all the same.
func ParseNodesEach(list gjson.Result, where string) ([]*Node, []*NodeParseError, error) {
	if !list.IsArray() {
		return nil, nil, fmt.Errorf("%s: want a list of nodes, got %s", where, describe(list))
	}
	nodes := []*Node{}
	var bad []*NodeParseError
	for i, v := range list.Array() {
		n, err := parseNode(v)
		if err != nil {
			pe := &NodeParseError{Where: where, Index: i, Err: err}
			var te *TypeError
			if errors.As(err, &te) {
				pe.Option = OptionPathOf(te.Option)
			}
			if n != nil {
				pe.Node, pe.Source = n.Name, n.Source
			}
			bad = append(bad, pe)
			continue
		}
		nodes = append(nodes, n)
	}
	return nodes, bad, nil
}

// decoder reads typed values and keeps the first error, so that the code
// that walks a node reads like the model it fills.
type decoder struct {
	err error
	// notData are the options whose values are no data (FR-002):
	// extraction wrote null in their place, and a rule names them, which
	// beats a type error.
	notData map[string]bool
}

func (d *decoder) fail(opt, want string, v gjson.Result) {
	if d.notData[opt] {
		return
	}
	if d.err == nil {
		d.err = &TypeError{Option: opt, Want: want, Got: describe(v)}
	}
}

// TypeError is a value of a node whose type is not the one its option
// takes.
type TypeError struct {
	// Option is the option's path as Nix writes it, with a list entry's
	// index (fediversity.podRoles.roles.web.units[0]).
	Option    string
	Want, Got string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("%s: want %s, got %s", e.Option, e.Want, e.Got)
}

// NotEvaluatedError is a node that nix could not evaluate when the facts
// were written (lib.mkCheck): the document names it, and why, in place of
// its facts.
type NotEvaluatedError struct{ Reason string }

func (e *NotEvaluatedError) Error() string { return e.Reason }

func describe(v gjson.Result) string {
	if !v.Exists() {
		return "nothing"
	}
	raw := v.Raw
	if len(raw) > 40 {
		raw = raw[:37] + "..."
	}
	switch {
	case v.Type == gjson.Null:
		return "null"
	case v.IsObject():
		return "an attribute set"
	case v.IsArray():
		return "a list"
	case v.Type == gjson.String:
		return "the string " + raw
	case v.Type == gjson.Number:
		return "the number " + raw
	default:
		return raw
	}
}

func (d *decoder) str(v gjson.Result, opt, def string) string {
	switch {
	case !v.Exists():
		return def
	case v.Type == gjson.String:
		return v.Str
	}
	d.fail(opt, "a string", v)
	return def
}

func (d *decoder) nullableStr(v gjson.Result, opt string) *string {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	s := d.str(v, opt, "")
	if d.err != nil {
		return nil
	}
	return &s
}

func (d *decoder) boolean(v gjson.Result, opt string, def bool) bool {
	switch {
	case !v.Exists():
		return def
	case v.Type == gjson.True:
		return true
	case v.Type == gjson.False:
		return false
	}
	d.fail(opt, "true or false", v)
	return def
}

func (d *decoder) integer(v gjson.Result, opt string) int {
	if v.Type == gjson.Number {
		if n, err := strconv.Atoi(v.Raw); err == nil {
			return n
		}
	}
	d.fail(opt, "an integer", v)
	return 0
}

func (d *decoder) nullableInt(v gjson.Result, opt string) *int {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	n := d.integer(v, opt)
	if d.err != nil {
		return nil
	}
	return &n
}

func (d *decoder) list(v gjson.Result, opt string, each func(i int, e gjson.Result, opt string)) {
	if !v.Exists() {
		return
	}
	if !v.IsArray() {
		d.fail(opt, "a list", v)
		return
	}
	for i, e := range v.Array() {
		each(i, e, fmt.Sprintf("%s[%d]", opt, i))
	}
}

func (d *decoder) strings(v gjson.Result, opt string) []string {
	out := []string{}
	d.list(v, opt, func(_ int, e gjson.Result, opt string) {
		out = append(out, d.str(e, opt, ""))
	})
	return out
}

func (d *decoder) ints(v gjson.Result, opt string) []int {
	out := []int{}
	d.list(v, opt, func(_ int, e gjson.Result, opt string) {
		out = append(out, d.integer(e, opt))
	})
	return out
}

// attrs walks a JSON object by key; opt names the attribute set, and each
// gets the option path of its entry.
func (d *decoder) attrs(v gjson.Result, opt string, each func(key string, e gjson.Result, opt string)) {
	if !v.Exists() {
		return
	}
	if !v.IsObject() {
		d.fail(opt, "an attribute set", v)
		return
	}
	v.ForEach(func(k, e gjson.Result) bool {
		each(k.Str, e, opt+"."+AttrName(k.Str))
		return d.err == nil
	})
}

func (d *decoder) object(v gjson.Result, opt string) bool {
	if v.Exists() && !v.IsObject() {
		d.fail(opt, "an attribute set", v)
		return false
	}
	return true
}

func (d *decoder) portLists(v gjson.Result, opt string) PortLists {
	d.object(v, opt)
	ranges := func(key string) []PortRange {
		out := []PortRange{}
		d.list(v.Get(key), opt+"."+key, func(_ int, e gjson.Result, opt string) {
			if d.object(e, opt) {
				out = append(out, PortRange{From: d.integer(e.Get("from"), opt+".from"), To: d.integer(e.Get("to"), opt+".to")})
			}
		})
		return out
	}
	return PortLists{
		AllowedTCPPorts:      d.ints(v.Get("allowedTCPPorts"), opt+".allowedTCPPorts"),
		AllowedUDPPorts:      d.ints(v.Get("allowedUDPPorts"), opt+".allowedUDPPorts"),
		AllowedTCPPortRanges: ranges("allowedTCPPortRanges"),
		AllowedUDPPortRanges: ranges("allowedUDPPortRanges"),
	}
}

func parseNode(v gjson.Result) (*Node, error) {
	d := &decoder{}
	if !d.object(v, "node") {
		return nil, d.err
	}
	n := &Node{
		Name:   d.str(v.Get("name"), "name", ""),
		Source: d.str(v.Get("source"), "source", ""),

		NamedAfterFile: d.boolean(v.Get("namedAfterFile"), "namedAfterFile", false),
		Units:          map[string]Unit{},
	}
	if d.err == nil && n.Name == "" {
		d.err = fmt.Errorf("name: a node needs a name")
	}
	if reason := v.Get("notEvaluated"); d.err == nil && reason.Exists() {
		return n, &NotEvaluatedError{Reason: d.str(reason, "notEvaluated", "")}
	}

	d.list(v.Get("notData"), "notData", func(_ int, e gjson.Result, opt string) {
		if !d.object(e, opt) {
			return
		}
		nd := NotData{Path: []any{}, Kind: d.str(e.Get("kind"), opt+".kind", "")}
		d.list(e.Get("path"), opt+".path", func(_ int, p gjson.Result, opt string) {
			if p.Type == gjson.String {
				nd.Path = append(nd.Path, p.Str)
			} else {
				nd.Path = append(nd.Path, d.integer(p, opt))
			}
		})
		n.NotData = append(n.NotData, nd)
	})

	d.notData = map[string]bool{}
	for _, nd := range n.NotData {
		d.notData[nd.Option()] = true
	}

	d.attrs(v.Get("units"), "systemd.services", func(name string, u gjson.Result, opt string) {
		if d.object(u, opt) {
			n.Units[name] = Unit{Enable: d.boolean(u.Get("enable"), opt+".enable", true)}
		}
	})
	n.ModularServices = d.strings(v.Get("modularServices"), "system.services")
	n.StateMigrations = d.strings(v.Get("stateMigrations"), "systemd.stateMigrations")

	fw := v.Get("firewall")
	if d.object(fw, "networking.firewall") {
		n.Firewall = Firewall{
			Enable:     d.boolean(fw.Get("enable"), "networking.firewall.enable", true),
			PortLists:  d.portLists(fw, "networking.firewall"),
			Interfaces: map[string]PortLists{},
		}
		d.attrs(fw.Get("interfaces"), "networking.firewall.interfaces", func(name string, e gjson.Result, opt string) {
			n.Firewall.Interfaces[name] = d.portLists(e, opt)
		})
	}

	n.PodRoles = d.podRoles(v.Get("podRoles"), "fediversity.podRoles")

	k8s := v.Get("k8sPod")
	if d.object(k8s, "fediversity.k8sPod") {
		n.K8sPod = K8sPod{
			Enable:        d.boolean(k8s.Get("enable"), "fediversity.k8sPod.enable", false),
			PlatformUnits: d.strings(k8s.Get("platformUnits"), "fediversity.k8sPod.platformUnits"),
			AddedUnits:    d.strings(k8s.Get("addedUnits"), "k8sPod.addedUnits"),
		}
		if len(n.K8sPod.AddedUnits) == 0 {
			n.K8sPod.AddedUnits = nil
		}
		if only := d.strings(k8s.Get("conditionOnlyUnits"), "k8sPod.conditionOnlyUnits"); len(only) > 0 {
			n.K8sPod.ConditionOnlyUnits = only
			if c := d.strings(k8s.Get("condition"), "k8sPod.condition"); len(c) > 0 {
				n.K8sPod.Condition = c
			}
		}
		d.list(k8s.Get("hostModules"), "k8sPod.hostModules", func(_ int, e gjson.Result, opt string) {
			if d.object(e, opt) {
				n.K8sPod.HostModules = append(n.K8sPod.HostModules, HostModule{
					File:  d.str(e.Get("file"), opt+".file", ""),
					Units: d.strings(e.Get("units"), opt+".units"),
				})
			}
		})
	}

	if p := v.Get("listsProbe"); p.Exists() && p.Type != gjson.Null && d.object(p, "listsProbe") {
		n.ListsProbe = &ListsProbe{
			RoleNames:           d.boolean(p.Get("roleNames"), "listsProbe.roleNames", false),
			Roles:               d.strings(p.Get("roles"), "listsProbe.roles"),
			MainUnits:           d.boolean(p.Get("mainUnits"), "listsProbe.mainUnits", false),
			SharedUnits:         d.boolean(p.Get("sharedUnits"), "listsProbe.sharedUnits", false),
			K8sPodModuleSkipped: d.boolean(p.Get("k8sPodModuleSkipped"), "listsProbe.k8sPodModuleSkipped", false),
		}
	}

	d.list(v.Get("definitions"), "definitions", func(_ int, e gjson.Result, opt string) {
		if d.object(e, opt) {
			n.Definitions = append(n.Definitions, d.located(e, opt))
		}
	})

	l := v.Get("lldap")
	if d.object(l, "fediversity.lldap") && d.object(l.Get("tls"), "fediversity.lldap.tls") {
		n.LLDAP = LLDAP{
			Host:                   d.str(l.Get("host"), "fediversity.lldap.host", "localhost"),
			ReaderBindPasswordFile: d.nullableStr(l.Get("readerBindPasswordFile"), "fediversity.lldap.readerBindPasswordFile"),
			TLS: TLS{
				Enable: d.boolean(l.Get("tls.enable"), "fediversity.lldap.tls.enable", false),
				CAFile: d.nullableStr(l.Get("tls.caFile"), "fediversity.lldap.tls.caFile"),
			},
		}
	}

	a := v.Get("authelia")
	if d.object(a, "fediversity.authelia") && d.object(a.Get("storage"), "fediversity.authelia.storage") &&
		d.object(a.Get("forwardAuth"), "fediversity.authelia.forwardAuth") {
		n.Authelia = Authelia{
			Host:   d.str(a.Get("host"), "fediversity.authelia.host", "localhost"),
			CAFile: d.nullableStr(a.Get("caFile"), "fediversity.authelia.caFile"),
			Storage: AutheliaStorage{
				Postgres: d.boolean(a.Get("storage.postgres"), "fediversity.authelia.storage.postgres", false),
			},
			SMTP:        d.boolean(a.Get("smtp"), "fediversity.authelia.smtp", false),
			ForwardAuth: ForwardAuth{Enable: d.boolean(a.Get("forwardAuth.enable"), "fediversity.authelia.forwardAuth.enable", false)},
		}
		if local := a.Get("storage.local"); local.Exists() && local.Type != gjson.Null && d.object(local, "fediversity.authelia.storage.local") {
			n.Authelia.Storage.Local = &LocalStorage{Path: d.str(local.Get("path"), "fediversity.authelia.storage.local.path", "")}
		}
	}

	slices.Sort(n.ModularServices)
	slices.Sort(n.StateMigrations)
	if d.err == nil && !v.Get("podRoles").Exists() {
		// Extraction writes podRoles for every node, empty when the node
		// sets none: a document without it was written by something else.
		d.err = fmt.Errorf("podRoles: missing; podroles facts writes it for every node, empty when the node sets none")
	}
	return n, d.err
}

func (d *decoder) podRoles(v gjson.Result, opt string) PodRoles {
	p := PodRoles{Roles: map[string]Role{}, Services: map[string]Service{}}
	if !d.object(v, opt) {
		return p
	}
	d.attrs(v.Get("roles"), opt+".roles", func(name string, r gjson.Result, opt string) {
		if d.object(r, opt) {
			p.Roles[name] = d.role(r, opt)
		}
	})
	p.MainUnits = d.strings(v.Get("mainUnits"), opt+".mainUnits")
	p.SharedUnits = d.strings(v.Get("sharedUnits"), opt+".sharedUnits")
	d.attrs(v.Get("services"), opt+".services", func(name string, s gjson.Result, opt string) {
		if d.object(s, opt) {
			svc := Service{Environment: d.strings(s.Get("environment"), opt+".environment"), Companion: d.nullableStr(s.Get("companion"), opt+".companion")}
			if vars := s.Get("variables"); vars.Exists() && vars.Type != gjson.Null {
				svc.Variables = d.variables(vars, opt+".environment")
				svc.Environment = append([]string{}, slices.Collect(maps.Keys(svc.Variables))...)
			}
			slices.Sort(svc.Environment)
			p.Services[name] = svc
		}
	})
	return p
}

// variables reads the variables of a service's image: strings only. facts.nix
// puts {"notAString": TYPE} where a value is of another type, so that the
// error names the option without nix forcing the value.
func (d *decoder) variables(v gjson.Result, opt string) map[string]string {
	out := map[string]string{}
	d.attrs(v, opt, func(name string, e gjson.Result, opt string) {
		if kind := e.Get("notAString"); e.IsObject() && kind.Type == gjson.String {
			if d.err == nil {
				d.err = fmt.Errorf("%s: want a string (Kubernetes gives an image's variables as strings), got %s", opt, nixKind(kind.Str))
			}
			return
		}
		out[name] = d.str(e, opt, "")
	})
	return out
}

// nixKind names a value by what builtins.typeOf (or facts.nix) calls it.
func nixKind(kind string) string {
	switch kind {
	case "int":
		return "an integer"
	case "bool":
		return "true or false"
	case "set":
		return "an attribute set"
	case "null":
		return "null"
	case "lambda", "function":
		return "a function"
	}
	return "a " + kind
}

func (d *decoder) role(v gjson.Result, opt string) Role {
	r := Role{
		Replicas:  d.nullableInt(v.Get("replicas"), opt+".replicas"),
		Units:     d.strings(v.Get("units"), opt+".units"),
		Service:   d.nullableStr(v.Get("service"), opt+".service"),
		Secrets:   map[string]Secret{},
		Ports:     []Port{},
		Companion: d.boolean(v.Get("companion"), opt+".companion", false),
	}
	d.attrs(v.Get("secrets"), opt+".secrets", func(name string, s gjson.Result, opt string) {
		if d.object(s, opt) {
			r.Secrets[name] = d.secret(s, opt)
		}
	})
	d.list(v.Get("ports"), opt+".ports", func(_ int, p gjson.Result, opt string) {
		if d.object(p, opt) {
			r.Ports = append(r.Ports, Port{
				Port:     d.integer(p.Get("port"), opt+".port"),
				Protocol: d.str(p.Get("protocol"), opt+".protocol", ProtocolTCP),
			})
		}
	})
	if m := v.Get("metrics"); m.Exists() && m.Type != gjson.Null && d.object(m, opt+".metrics") {
		r.Metrics = &Metrics{
			Port: d.integer(m.Get("port"), opt+".metrics.port"),
			Path: d.str(m.Get("path"), opt+".metrics.path", "/metrics"),
		}
	}
	return r
}

func (d *decoder) secret(v gjson.Result, opt string) Secret {
	s := Secret{
		Path:     d.str(nullAsAbsent(v.Get("path")), opt+".path", ""),
		Field:    d.nullableStr(v.Get("field"), opt+".field"),
		Encoding: d.nullableStr(v.Get("encoding"), opt+".encoding"),
		Variable: d.nullableStr(v.Get("variable"), opt+".variable"),
		Template: d.nullableStr(v.Get("template"), opt+".template"),
		Restart:  d.boolean(v.Get("restart"), opt+".restart", false),
	}
	if p := v.Get("parameters"); p.Exists() && p.Type != gjson.Null {
		if d.object(p, opt+".parameters") {
			if params, ok := p.Value().(map[string]any); ok {
				s.Parameters = params
			}
		}
	}
	return s
}

// nullAsAbsent lets a required string that the node left unset (extraction
// prints null) read as absent; the rules name it, which beats a type error.
func nullAsAbsent(v gjson.Result) gjson.Result {
	if v.Type == gjson.Null {
		return gjson.Result{}
	}
	return v
}

// ReadFile reads a facts document from a file.
func ReadFile(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseDocument(data)
}

// ReadFileEach reads a facts document from a file as ParseDocumentEach.
func ReadFileEach(path string) (*Document, []*NodeParseError, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseDocumentEach(data)
}

// Marshal writes a facts document as JSON that ParseDocument reads back to
// facts of the same meaning, for facts made in Go (the local
// environment's node, a test's): what Go leaves nil is left out, so that a
// nil list or attribute set reads as empty and a nil value as null, where
// json.Marshal's null would be refused for a list.
func Marshal(doc *Document) ([]byte, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	return json.MarshalIndent(dropNulls(v), "", "  ")
}

// dropNulls removes the null members of every object in v.
func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
			} else {
				v[k] = dropNulls(e)
			}
		}
	case []any:
		for i, e := range v {
			v[i] = dropNulls(e)
		}
	}
	return v
}

// located reads an entry of definitions: an option reference and its
// definitions, whose line and column are null where nix knows only the
// file.
func (d *decoder) located(v gjson.Result, opt string) Located {
	l := Located{OptionRef: OptionRef{Path: d.strings(v.Get("path"), opt+".path"), Holds: d.str(v.Get("holds"), opt+".holds", "")}, Defs: []Definition{}}
	if p := v.Get("port"); p.Exists() && p.Type != gjson.Null && d.object(p, opt+".port") {
		l.Port = &Port{Port: d.integer(p.Get("port"), opt+".port.port"), Protocol: d.str(p.Get("protocol"), opt+".port.protocol", "TCP")}
	}
	position := func(v gjson.Result, opt string) int {
		if !v.Exists() || v.Type == gjson.Null {
			return 0
		}
		return d.integer(v, opt)
	}
	d.list(v.Get("defs"), opt+".defs", func(_ int, e gjson.Result, opt string) {
		if !d.object(e, opt) {
			return
		}
		l.Defs = append(l.Defs, Definition{
			Location: Location{
				File:   d.str(e.Get("file"), opt+".file", ""),
				Line:   position(e.Get("line"), opt+".line"),
				Column: position(e.Get("column"), opt+".column"),
			},
			Priority: d.integer(e.Get("priority"), opt+".priority"),
			Lost:     d.boolean(e.Get("lost"), opt+".lost", false),
			OfNixOS:  d.boolean(e.Get("ofNixOS"), opt+".ofNixOS", false),
		})
	})
	return l
}
