package checks

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fediversity/podroles/facts"
)

// roleRules judge the roles (US2-3, US2-4, US2-7, US2-9).
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
