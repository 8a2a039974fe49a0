package checks

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// inputRules refuse input that no method can deploy: on every node.
var inputRules = []*Rule{
	{
		ID: "PR601", Name: "replicas-below-one", Spec: "FR-001", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's replicas is below 1.",
		check: replicasBelowOne,
	},
	{
		ID: "PR602", Name: "port-out-of-range", Spec: "FR-010, FR-010a", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's port or metrics port is outside 1–65535.",
		check: portOutOfRange,
	},
	{
		ID: "PR603", Name: "unknown-protocol", Spec: "FR-010", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's port has a protocol other than TCP or UDP.",
		check: unknownProtocol,
	},
	{
		ID: "PR604", Name: "unknown-encoding", Spec: "FR-009, US1-9", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A secret's encoding is neither null nor \"base64\".",
		check: unknownEncoding,
	},
	{
		ID: "PR605", Name: "metrics-path-not-absolute", Spec: "FR-010a", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's metrics path does not start with /.",
		check: metricsPathNotAbsolute,
	},
	{
		ID: "PR606", Name: "duplicate-port", Spec: "FR-010", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role gives the same port and protocol twice in its ports.",
		check: duplicatePort,
	},
	{
		ID: "PR607", Name: "invalid-deployment-name", Spec: "FR-001, node-surface: Names Kubernetes sees", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "On k8s-pod.nix, the node's name or <node>-<role> of a requested role is not a DNS-1123 label of at most 63 characters.",
		check: invalidDeploymentName,
	},
	{
		ID: "PR608", Name: "secret-without-path", Spec: "FR-009", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A secret has no path in OpenBao's KV v2 API.",
		check: secretWithoutPath,
	},
	{
		ID: "PR609", Name: "companion-not-absolute", Spec: "FR-012", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A service's companion program is not an absolute path in its image.",
		check: companionNotAbsolute,
	},
	{
		ID: "PR610", Name: "secret-without-field-or-template", Spec: "FR-009", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A secret has neither a field, nor a variable, nor a template: nothing says what to write to its file.",
		check: secretWithoutFieldOrTemplate,
	},
	{
		ID: "PR611", Name: "variable-without-field", Spec: "FR-009, US1-11", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A secret has a variable but no field (and no template) to read the environment file from.",
		check: variableWithoutField,
	},
	{
		ID: "PR612", Name: "request-not-data", Spec: "FR-002", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's settings (or a service's companion program) hold a function, a derivation, a path literal or a string of the store: a request holds only data.",
		check: requestNotData,
	},
	{
		ID: "PR613", Name: "role-collides-in-plan", Spec: "US1-1, Key Entities (Main pod), node-surface: Names Kubernetes sees", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A requested role's Deployment or Service has the name, or its pods the labels, of another object of the node's plan, as a role named main has the main pod's labels.",
		check: roleCollidesInPlan,
	},
	{
		ID: "PR614", Name: "role-collides-with-other-node", Spec: "US1-1, Key Entities (Main pod), node-surface: Names Kubernetes sees", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "Among the nodes checked together, a requested role's Deployment <node>-<role> has the name of another node's Deployment, as role worker of node app and node app-worker.",
		check: roleCollidesWithOtherNode,
	},
}

func replicasBelowOne(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Replicas != nil && *r.Replicas < 1 {
			report(role(name), at(roleOpt(name, "replicas")), "role %s has %d replicas: a requested role has at least 1; to run no pods of it, drop the request", name, *r.Replicas)
		}
	})
}

func portOutOfRange(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		for _, p := range r.Ports {
			if !validPort(p.Port) {
				report(Subject{SubjectPort, portName(p)}, at(portOpt(name, p)), "role %s has port %s, outside 1–65535", name, portName(p))
			}
		}
		if m := r.Metrics; m != nil && !validPort(m.Port) {
			metrics := facts.Port{Port: m.Port, Protocol: facts.ProtocolTCP}
			report(Subject{SubjectPort, portName(metrics)}, at(roleOpt(name, "metrics", "port"), roleOpt(name, "metrics")), "role %s has metrics port %s, outside 1–65535", name, portName(metrics))
		}
	})
}

func unknownProtocol(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		for _, p := range r.Ports {
			if p.Protocol != facts.ProtocolTCP && p.Protocol != facts.ProtocolUDP {
				report(Subject{SubjectPort, portName(p)}, at(portOpt(name, p)), "role %s has port %s, whose protocol %q is neither \"TCP\" nor \"UDP\" (in capitals)", name, portName(p), p.Protocol)
			}
		}
	})
}

func unknownEncoding(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Encoding == nil || *s.Encoding == "base64" {
			return
		}
		hint := "write \"base64\" for a field in base64, or null for none"
		switch e := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(*s.Encoding)); {
		case e == "base64":
			hint = "write it \"base64\", in lower case"
		case e == "base64url" || e == "urlbase64":
			field, path := "FIELD", s.Path
			if s.Field != nil && *s.Field != "" {
				field = *s.Field
			}
			if path == "" {
				path = "PATH"
			}
			hint = fmt.Sprintf("OpenBao's agent decodes the URL alphabet with base64URLDecode, which no encoding names: give the secret a template in place of its field and encoding (a template replaces them), {{ with secret %q }}{{ index .Data.data %q | base64URLDecode }}{{ end }}", path, field)
		}
		report(secret(file), at(secretOpt(roleName, file, "encoding")), "secret %s of role %s has encoding %q, which the sidecar cannot decode; the only encoding is \"base64\" (or null for none): %s", file, roleName, *s.Encoding, hint)
	})
}

func metricsPathNotAbsolute(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if m := r.Metrics; m != nil && !strings.HasPrefix(m.Path, "/") {
			report(role(name), at(roleOpt(name, "metrics", "path"), roleOpt(name, "metrics")), "role %s has metrics path %q, which does not start with /; write it as %q", name, m.Path, "/"+m.Path)
		}
	})
}

func duplicatePort(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		seen := map[facts.Port]int{}
		for _, p := range r.Ports {
			if seen[p]++; seen[p] == 2 {
				report(Subject{SubjectPort, portName(p)}, at(portOpt(name, p)), "role %s gives port %s more than once; give each port once", name, portName(p))
			}
		}
	})
}

// dnsLabelProblems says which conditions of a DNS-1123 label, what
// Kubernetes accepts as a Deployment or Service name, name breaks: at most
// 63 characters, only a-z, 0-9 and -, and - neither first nor last. None
// for a valid label.
func dnsLabelProblems(name string) []string {
	if name == "" {
		return []string{"it is empty"}
	}
	var problems []string
	if len(name) > 63 {
		problems = append(problems, fmt.Sprintf("it has %d characters, more than 63", len(name)))
	}
	var bad []string
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && !slices.Contains(bad, strconv.QuoteRune(c)) {
			bad = append(bad, strconv.QuoteRune(c))
		}
	}
	if len(bad) > 0 {
		problems = append(problems, fmt.Sprintf("it has %s, where only a-z, 0-9 and - may stand", joinAnd(bad)))
	}
	if strings.HasPrefix(name, "-") {
		problems = append(problems, "it starts with -")
	}
	if strings.HasSuffix(name, "-") {
		problems = append(problems, "it ends with -")
	}
	return problems
}

func invalidDeploymentName(n *node, report reportFunc) {
	// A role name that is wrong whatever the node's name: held on its own
	// where the node's name cannot be used.
	rolesOnTheirOwn := func() {
		n.eachRole(func(name string, r facts.Role) {
			// The role name follows "<node>-", so it may start with -.
			problems := slices.DeleteFunc(dnsLabelProblems(name), func(p string) bool { return p == "it starts with -" })
			if r.Requested() && len(problems) > 0 {
				report(role(name), at(roleOpt(name)), "role %s makes a Deployment name <node>-%s, which is no DNS-1123 label: %s; rename the role", name, name, joinAnd(problems))
			}
		})
	}
	if n.NamedAfterFile {
		// The node's name was made up from a file name: hold only the
		// role names against Kubernetes.
		rolesOnTheirOwn()
		return
	}
	// The name of a file's node is its hostName; a flake's is its
	// attribute under nixosConfigurations, which no option holds.
	var hostName []facts.OptionRef
	if strings.HasPrefix(n.Source, "file:") {
		hostName = append(hostName, opt("networking", "hostName"))
	}
	if problems := dnsLabelProblems(n.Name); len(problems) > 0 {
		report(Subject{SubjectNode, n.Name}, at(hostName...), "node name %q is not a valid name of the Deployment %s: %s (a DNS-1123 label has at most 63 characters, a-z, 0-9 and -, and starts and ends with a letter or digit); rename the node", n.Name, n.Name, joinAnd(problems))
		// A role name that is wrong on its own stays wrong after the
		// node is renamed: say so now, not after the next run.
		rolesOnTheirOwn()
		return
	}
	n.eachRole(func(name string, r facts.Role) {
		d := n.Name + "-" + name
		if problems := dnsLabelProblems(d); r.Requested() && len(problems) > 0 {
			report(role(name), at(roleOpt(name)).and(hostName...), "role %s makes the Deployment name %q, which is not a DNS-1123 label: %s; rename the role", name, d, joinAnd(problems))
		}
	})
}

func secretWithoutPath(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Path == "" {
			report(secret(file), at(secretOpt(roleName, file, "path"), secretOpt(roleName, file)), "secret %s of role %s has no path; give the full path of the secret in the KV v2 API of OpenBao, e.g. secret/data/%s/%s", file, roleName, roleName, file)
		}
	})
}

func companionNotAbsolute(n *node, report reportFunc) {
	for _, s := range slices.Sorted(maps.Keys(n.PodRoles.Services)) {
		if c := n.PodRoles.Services[s].Companion; c != nil && !strings.HasPrefix(*c, "/") {
			report(service(s), at(opt(podRolesPath("services", s, "companion")...)), "fediversity.podRoles.services.%s.companion is %q: the program of the companion is at a fixed, absolute path in the image of %s, e.g. /bin/companion", facts.AttrName(s), *c, s)
		}
	}
}

func secretWithoutFieldOrTemplate(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Field == nil && s.Template == nil && s.Variable == nil {
			report(secret(file), at(secretOpt(roleName, file), secretOpt(roleName, file, "path")), "secret %s of role %s has neither a field nor a template, so the sidecar would not know what to write to /run/secrets/%s (FR-009); give the field of the KV entry at %s, or a template over the response of another engine", file, roleName, file, s.Path)
		}
	})
}

func variableWithoutField(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Variable != nil && s.Field == nil && s.Template == nil {
			report(secret(file), at(secretOpt(roleName, file, "variable"), secretOpt(roleName, file)), "secret %s of role %s has variable %s but no field: the variable is read from a field that holds an environment file (FR-009, US1-11); give that field", file, roleName, *s.Variable)
		}
	})
}

func requestNotData(n *node, report reportFunc) {
	for _, d := range n.NotData {
		o := d.Option()
		var what, fix string
		switch d.Kind {
		case facts.NotDataFunction:
			what, fix = "a function", "give the value it would compute"
		case facts.NotDataPath:
			what, fix = "a path literal, which nix would copy to the store", "give the value as a string (a path in the image, a name)"
		case facts.NotDataDerivation:
			what, fix = "a derivation, which would have to be built", "give the value itself as plain data"
		default:
			what, fix = "a string that refers to the store (a package or a copied file), which would be built or copied", "give the value itself as a plain string"
		}
		if strings.HasSuffix(o, ".companion") {
			fix = "give the path of the program in the service's image as a plain string, e.g. \"/bin/companion\" (FR-012)"
		}
		report(option(o), at(notDataRef(d)), "%s is %s: a request holds only data, because the method reads the roles from the plan (FR-002); %s", o, what, fix)
	}
}

// notDataRef refers to the definitions of a value that is no data: the
// attribute path down to it, or to the list that holds it.
func notDataRef(d facts.NotData) facts.OptionRef {
	var path []string
	for _, e := range d.Path {
		name, ok := e.(string)
		if !ok {
			break
		}
		path = append(path, name)
	}
	return opt(path...)
}
