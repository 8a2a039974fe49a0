package checks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/lazyregexp"
)

// roleRules judge the roles and the variables of their services' images
// (US2-3, US2-4, US2-7, US2-9, FR-011).
var roleRules = []*Rule{
	{
		ID: "PR201", Name: "role-units-without-request", Spec: "US2-3", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role has units but no request (replicas is null).",
		check: roleUnitsWithoutRequest,
	},
	{
		ID: "PR202", Name: "role-request-without-units", Spec: "US2-3", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role of the node's image has a request but no units.",
		check: roleRequestWithoutUnits,
	},
	{
		ID: "PR203", Name: "unknown-modular-service", Spec: "US2-4", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role's service is not a modular service of the node (system.services).",
		check: unknownModularService,
	},
	{
		ID: "PR204", Name: "service-role-with-units", Spec: "US2-4", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs a modular service's image and also lists units.",
		check: serviceRoleWithUnits,
	},
	{
		ID: "PR205", Name: "settings-for-unknown-service", Spec: "US2-7, FR-011", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "fediversity.podRoles.services gives variables to a modular service the node does not have.",
		check: settingsForUnknownService,
	},
	{
		ID: "PR206", Name: "companion-without-secrets", Spec: "US2-9, FR-012", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role asks for a companion container but has no secrets.",
		check: companionWithoutSecrets,
	},
	{
		ID: "PR207", Name: "companion-without-program", Spec: "US2-9, FR-012", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role asks for a companion container but its service has no program in fediversity.podRoles.services.",
		check: companionWithoutProgram,
	},
	{
		ID: "PR208", Name: "service-variable-secret", Spec: "FR-011", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A variable of a modular service's image looks like a secret: a name for one (*_SECRET, *_PASSWORD, *_TOKEN, *_KEY) with a value, a PEM block, or a URL with a password.",
		check: serviceVariableSecret,
	},
	{
		ID: "PR209", Name: "service-variable-store-path", Spec: "FR-011", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A variable of a modular service's image holds a store path of the node, which the service's image does not hold.",
		check: serviceVariableStorePath,
	},
}

// secretNameWords end the names of variables that hold a secret.
var secretNameWords = []string{"SECRET", "PASSWORD", "PASSWD", "PASS", "TOKEN", "KEY", "APIKEY", "CREDENTIAL", "CREDENTIALS"}

// looksSecret says why a variable looks like a secret, or "": a name that
// ends in a word for one and a value that is not a file's path, a PEM
// block, or a URL with a password.
func looksSecret(name, value string) string {
	words := strings.Split(strings.ToUpper(name), "_")
	last := words[len(words)-1]
	switch {
	case strings.Contains(value, "-----BEGIN "):
		return "its value is a PEM block"
	case urlWithPassword.MatchString(value):
		return "its value is a URL with a password"
	case value == "" || strings.HasPrefix(value, "/"):
		return "" // a file's path names a secret, it does not hold one
	case slices.Contains(secretNameWords, last):
		return fmt.Sprintf("its name ends in %s and it has a value", last)
	}
	return ""
}

// urlWithPassword is scheme://user:password@host.
var urlWithPassword = lazyregexp.New(`^[a-zA-Z][a-zA-Z0-9+.-]*://[^/@:\s]*:[^/@\s]+@`)

func serviceVariableSecret(n *node, report reportFunc) {
	n.eachServiceVariables(func(s string, vars map[string]string) {
		var names, whys []string
		for _, name := range slices.Sorted(maps.Keys(vars)) {
			if why := looksSecret(name, vars[name]); why != "" {
				names, whys = append(names, name), append(whys, name+": "+why)
			}
		}
		if len(names) > 0 {
			report(service(s), variablesAt(s, names), "variables of service %s look like secrets (%s): the image holds its variables' values, so a secret must come from OpenBao; give the role a secret with variable = NAME, or a file, and remove the value from fediversity.podRoles.services.%s.environment", s, strings.Join(whys, "; "), facts.AttrName(s))
		}
	})
}

func serviceVariableStorePath(n *node, report reportFunc) {
	n.eachServiceVariables(func(s string, vars map[string]string) {
		var names, whats []string
		for _, name := range slices.Sorted(maps.Keys(vars)) {
			if strings.Contains(vars[name], storeDir) {
				names, whats = append(names, name), append(whats, fmt.Sprintf("%s = %q", name, vars[name]))
			}
		}
		if len(names) > 0 {
			report(service(s), variablesAt(s, names), "variables of service %s hold store paths of the node (%s), which the image of %s does not hold: give paths in the service's image, or settings that are not paths", s, strings.Join(whats, "; "), s)
		}
	})
}

// variablesAt places a finding on variables of a service's image: the
// first, with the others as notes.
func variablesAt(s string, names []string) place {
	refs := make([]facts.OptionRef, len(names))
	for i, name := range names {
		refs[i] = opt(podRolesPath("services", s, "environment", name)...)
	}
	return at(refs[0]).and(refs[1:]...)
}

// storeDir is where a node's store paths are.
const storeDir = "/nix/store/"

// eachServiceVariables calls f with the variables (those with string
// values) of each modular service of the node that a role runs, in name
// order.
func (n *node) eachServiceVariables(f func(service string, vars map[string]string)) {
	for _, s := range slices.Sorted(maps.Keys(n.PodRoles.Services)) {
		if vars := n.PodRoles.Services[s].Variables; len(n.rolesRunning(s)) > 0 && len(vars) > 0 {
			f(s, vars)
		}
	}
}

func roleUnitsWithoutRequest(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if len(r.Units) > 0 && !r.Requested() {
			report(role(name), at(roleOpt(name, "units"), roleOpt(name)), "role %s has units (%s) but no request: replicas is null; request the role, or leave its units empty", name, joinAnd(r.Units))
		}
	})
}

func roleRequestWithoutUnits(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Requested() && r.RunsNodeImage() && len(r.Units) == 0 {
			report(role(name), at(roleOpt(name, "replicas"), roleOpt(name)), "role %s is requested with %d replicas of the node's image but lists no units, so its pods would run nothing; list its units in fediversity.podRoles.roles.%s.units, or give it a service", name, *r.Replicas, facts.AttrName(name))
		}
	})
}

func unknownModularService(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Service != nil && !slices.Contains(n.ModularServices, *r.Service) {
			hint := "enable the modular service in system.services or fix the name"
			if near := nearest(*r.Service, n.ModularServices); near != "" {
				hint = fmt.Sprintf("did you mean %s?", near)
			}
			report(role(name), at(roleOpt(name, "service")), "role %s runs service %s, which is no modular service of the node (no system.services.%s): %s", name, *r.Service, facts.AttrName(*r.Service), hint)
		}
	})
}

func serviceRoleWithUnits(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Service != nil && len(r.Units) > 0 {
			report(role(name), at(roleOpt(name, "units")).and(roleOpt(name, "service")), "role %s runs the image of service %s, which has no systemd, and also lists units (%s); remove the units, or the service to run the node's image", name, *r.Service, joinAnd(r.Units))
		}
	})
}

func settingsForUnknownService(n *node, report reportFunc) {
	for _, s := range slices.Sorted(maps.Keys(n.PodRoles.Services)) {
		cfg := n.PodRoles.Services[s]
		if slices.Contains(n.ModularServices, s) || len(cfg.Environment) == 0 {
			continue
		}
		report(service(s), at(opt(podRolesPath("services", s, "environment")...)), "fediversity.podRoles.services.%s.environment gives variables (%s) to service %s, which is no modular service of the node (no system.services.%s); fix the name or remove the entry", facts.AttrName(s), joinAnd(cfg.Environment), s, facts.AttrName(s))
	}
}

func companionWithoutSecrets(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Companion && len(r.Secrets) == 0 {
			report(role(name), at(roleOpt(name, "companion")), "role %s asks for a companion but has no secrets: a companion exists to work with the role's secrets; add the secrets or set companion to false", name)
		}
	})
}

func companionWithoutProgram(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if !r.Companion {
			return
		}
		if r.Service == nil {
			report(role(name), at(roleOpt(name, "companion")), "role %s asks for a companion but runs the node's image: a companion comes from a modular service's image; give the role a service or set companion to false", name)
			return
		}
		if n.PodRoles.Services[*r.Service].Companion == nil {
			report(role(name), at(opt(podRolesPath("services", *r.Service, "companion")...), roleOpt(name, "companion")), "role %s asks for a companion but fediversity.podRoles.services.%s.companion is null; give the path of the program in the image of %s", name, facts.AttrName(*r.Service), *r.Service)
		}
	})
}

// eachRoleRunning calls f for each role that runs modular service s.
func (n *node) eachRoleRunning(s string, f func(name string, r facts.Role)) {
	for _, name := range n.rolesRunning(s) {
		f(name, n.PodRoles.Roles[name])
	}
}
