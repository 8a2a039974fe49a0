package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/lazyregexp"
)

// unitRules judge the names of units (FR-008): on every method, once a
// node has a request.
var unitRules = []*Rule{
	{
		ID: "PR101", Name: "unknown-unit", Spec: "FR-008, US2-1", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's units, mainUnits or sharedUnits names a unit that the node does not have.",
		check: unknownUnit,
	},
	{
		ID: "PR102", Name: "unit-in-two-lists", Spec: "FR-008, US2-2, FR-014", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A unit is in more than one of the roles' units, mainUnits and sharedUnits.",
		check: unitInTwoLists,
	},
	{
		ID: "PR103", Name: "unlisted-unit", Spec: "FR-014, US1-17", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "On k8s-pod.nix with a role of the node's image, an enabled unit is in no list and not in platformUnits.",
		check: unlistedUnit,
	},
	{
		ID: "PR104", Name: "run-once-unit-shared", Spec: "FR-006", Severity: SeverityWarning, Scope: ScopeK8s,
		Doc:   "A unit in sharedUnits looks like one that must run once (ACME, init, setup, migration, provisioning).",
		check: runOnceUnitShared,
	},
	{
		ID: "PR105", Name: "service-unit-in-node-image", Spec: "US1-6", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A requested role runs a modular service from its image, and the node's own unit of that service is enabled and would start in a pod of the node's image.",
		check: serviceUnitInNodeImage,
	},
	{
		ID: "PR106", Name: "lists-read-systemd-services", Spec: "FR-007", Severity: SeverityError, Scope: ScopeRequest,
		Doc:   "A role's units, mainUnits or sharedUnits reads config.systemd.services (found by a probe of the module system).",
		check: listsReadSystemdServices,
		needs: needsModuleSystem,
	},
	{
		ID: "PR107", Name: "names-hidden-by-own-k8s-pod-module", Spec: "FR-008, SC-002", Severity: SeverityWarning, Scope: ScopeK8s,
		Doc:   "The node imports a k8s-pod module itself that --k8s-pod-module does not name, and a name in its lists is a unit only through that module, whose definitions of it set more than its condition but nothing that runs, so FR-008 could not judge it.",
		check: namesHiddenByOwnK8sPodModule,
		needs: needsModules,
	},
}

func unknownUnit(n *node, report reportFunc) {
	if len(n.unknown) == 0 {
		return
	}
	// One finding per name, naming every list that has it.
	var names []string
	listsOf := map[string][]unitList{}
	for _, un := range n.unknown {
		if listsOf[un.name] == nil {
			names = append(names, un.name)
		}
		listsOf[un.name] = append(listsOf[un.name], n.lists[un.list])
	}
	near := n.nearMisses()
	for _, u := range names {
		var labels, options []string
		for _, l := range listsOf[u] {
			labels, options = append(labels, l.label), append(options, l.option)
		}
		verb := "lists"
		if len(labels) > 1 {
			verb = "list"
		}
		hint := "fix the name or remove it from " + joinAnd(options)
		if near[u] != "" {
			hint = fmt.Sprintf("did you mean %s? Fix the name in %s", near[u], joinAnd(options))
		}
		why := fmt.Sprintf("no systemd.services.%s", facts.AttrName(u))
		if slices.Contains(n.K8sPod.ConditionOnlyUnits, u) {
			sets := ""
			if len(n.K8sPod.Condition) > 0 {
				sets = joinAnd(n.K8sPod.Condition) + ", "
			}
			why = fmt.Sprintf("every definition of systemd.services.%s sets only %sthe condition that the node's own k8s-pod module puts on every listed name, and nothing that runs", facts.AttrName(u), sets)
		} else if i, ok := n.unitIdx[u]; ok && n.units[i].added {
			why = fmt.Sprintf("no module of the node defines systemd.services.%s; only the condition that the k8s-pod module puts on every listed name makes a unit of it", facts.AttrName(u))
		}
		where := at(listsOf[u][0].holding(u))
		for _, l := range listsOf[u][1:] {
			where = where.and(l.holding(u))
		}
		report(unit(u), where, "%s %s unit %s, which is no unit of the node (%s): %s", joinAnd(labels), verb, u, why, hint)
	}
}

// nearMisses maps each name in a list that is no unit of the node to the
// unit it most likely meant, or to nothing. A renamed unit is most likely
// one that no list names yet, so those are tried first.
func (n *node) nearMisses() map[string]string {
	if len(n.unknown) == 0 {
		return nil
	}
	var unlisted, listed []string
	for _, u := range n.units {
		switch {
		case u.added:
		case u.firstList >= 0:
			listed = append(listed, u.name)
		default:
			unlisted = append(unlisted, u.name)
		}
	}
	out := map[string]string{}
	for _, un := range n.unknown {
		if _, done := out[un.name]; done {
			continue
		}
		near := nearest(un.name, unlisted)
		if near == "" {
			near = nearest(un.name, listed)
		}
		out[un.name] = near
	}
	return out
}

func unitInTwoLists(n *node, report reportFunc) {
	for u, lists := range n.inMany {
		where := at(n.listLabelled(lists[0]).holding(u))
		for _, label := range lists[1:] {
			where = where.and(n.listLabelled(label).holding(u))
		}
		report(unit(u), where, "unit %s is in %d lists, %s: a unit runs in the pods of one list only; keep it in one", u, len(lists), joinAnd(lists))
	}
}

// hasNodeImageRole reports whether a requested role runs the image of the
// node: only then does the node's image decide per pod which units run.
func (n *node) hasNodeImageRole() (string, bool) {
	for _, name := range n.roles {
		if r := n.PodRoles.Roles[name]; r.RunsNodeImage() && r.Requested() {
			return name, true
		}
	}
	return "", false
}

func unlistedUnit(n *node, report reportFunc) {
	roleName, ok := n.hasNodeImageRole()
	if !ok {
		return
	}
	near := n.nearMisses()
	platform := make(map[string]bool, len(n.K8sPod.PlatformUnits))
	for _, u := range n.K8sPod.PlatformUnits {
		platform[u] = true
	}
	for _, info := range n.units {
		u := info.name
		if !info.enable || info.firstList >= 0 || platform[u] {
			continue
		}
		if n.refusedAsServiceUnit(info) || n.refusedAsLLDAPProvision(info) {
			continue // PR105 and PR506 say to disable it, not to list it
		}
		report(unit(u), at(opt("systemd", "services", u)), "unit %s is enabled and in no list, and role %s runs the image of the node, so the unit has no pod: %sadd it to a role's units, to fediversity.podRoles.mainUnits or fediversity.podRoles.sharedUnits, or, for a unit of NixOS or the platform, to fediversity.k8sPod.platformUnits", u, roleName, misspelledAs(u, near))
	}
}

// misspelledAs says which names in the lists (PR101) look like unit u
// misspelled, so that the fix of the list comes first.
func misspelledAs(u string, near map[string]string) string {
	var names []string
	for name, meant := range near {
		if meant == u {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return fmt.Sprintf("the lists name %s, which is no unit (PR101): if that means %s, fix the name there; else ", joinAnd(names), u)
}

// runOncePatterns mark a unit that must run one time (FR-006): an ACME
// order or its set-up, or a unit whose name has one of the words init,
// initdb, setup, migrate, migration(s), provision or bootstrap. systemd's
// own units (systemd-tmpfiles-setup, ...) set up each pod's system and are
// not marked.
var runOncePatterns = lazyregexp.New(`^acme-|(^|[-_@.])(init|initdb|setup|migrate|migrations?|provision|bootstrap)([-_@.]|$)`)

// perMachineUnits are NixOS units whose names look run-once but that set up
// each machine, so each pod.
var perMachineUnits = map[string]bool{"network-setup": true, "resolvconf-setup": true, "nscd-setup": true}

func runOnceUnitShared(n *node, report reportFunc) {
	for _, u := range facts.UniqueNames(n.PodRoles.SharedUnits) {
		if runOncePatterns.MatchString(u) && !strings.HasPrefix(u, "systemd-") && !perMachineUnits[u] {
			report(unit(u), at(n.listLabelled("sharedUnits").holding(u)), "unit %s is in sharedUnits and so runs in every pod, but its name marks a unit that must run once (FR-006); move it to a role or to mainUnits", u)
		}
	}
}

// listsNaming returns the labels of the lists that name unit u.
func (n *node) listsNaming(u string) []string {
	var out []string
	for _, l := range n.lists {
		if slices.Contains(l.units, u) {
			out = append(out, l.label)
		}
	}
	return out
}

// runsInNodeImage says where unit u starts in the pods of the node's image,
// or "" when in none: the pods of the lists that name it (a role of the
// node's image, mainUnits, sharedUnits), or, in no list, the main pod (with
// no role of the node's image) or no pod at all (PR103).
func (n *node) runsInNodeImage(u string) string {
	var where []string
	for _, l := range n.lists {
		if !slices.Contains(l.units, u) {
			continue
		}
		if r, ok := strings.CutPrefix(l.label, "role "); ok && !n.PodRoles.Roles[r].RunsNodeImage() {
			continue // PR204 refuses units in a role of a service's image
		}
		where = append(where, l.label)
	}
	if len(where) > 0 {
		return "it is in " + joinAnd(where) + ", so it starts in those pods"
	}
	for _, l := range n.lists {
		if slices.Contains(l.units, u) {
			return ""
		}
	}
	if name, ok := n.hasNodeImageRole(); ok {
		return fmt.Sprintf("it is in no list, and role %s runs the image of the node", name)
	}
	return "it is in no list, so it starts in the main pod"
}

// serviceRoleOf returns a requested role that runs modular service s from
// its image, if any (US1-6).
func (n *node) serviceRoleOf(s string) (string, bool) {
	for _, name := range n.roles {
		if r := n.PodRoles.Roles[name]; r.Requested() && r.RunsService(s) {
			return name, true
		}
	}
	return "", false
}

// refusedAsServiceUnit reports whether PR105 refuses unit u: the enabled
// unit of a modular service that a requested role runs from its image.
func (n *node) refusedAsServiceUnit(u unitInfo) bool {
	_, ok := n.serviceRoleOf(u.name)
	return ok && u.enable && !u.added
}

func serviceUnitInNodeImage(n *node, report reportFunc) {
	for _, s := range n.ModularServices {
		roleName, ok := n.serviceRoleOf(s)
		idx, isUnit := n.unitIdx[s]
		if !ok || !isUnit || !n.refusedAsServiceUnit(n.units[idx]) {
			continue
		}
		where := n.runsInNodeImage(s)
		if where == "" {
			continue
		}
		// The fix is to disable it: where it is enabled, else where the
		// unit is defined, else (a unit only NixOS defines) where the host
		// made the modular service.
		place := at(opt("systemd", "services", s, "enable"), opt("systemd", "services", s), opt("system", "services", s))
		for _, label := range n.listsNaming(s) {
			place = place.and(n.listLabelled(label).holding(s))
		}
		report(unit(s), place, "unit %s of modular service %s is enabled, and %s; but role %s runs %s from the service's image, so no pod of the node's image may start the unit (US1-6), or two of it would run: disable it on k8s-pod.nix (systemd.services.%s.enable = false, e.g. under lib.mkIf config.fediversity.k8sPod.enable)%s",
			s, s, where, roleName, s, facts.AttrName(s), removeFromLists(n.listsNaming(s)))
	}
}

// removeFromLists is the second half of a fix for a unit in lists.
func removeFromLists(labels []string) string {
	if len(labels) == 0 {
		return ""
	}
	return " and remove it from " + joinAnd(labels)
}

func listsReadSystemdServices(n *node, report reportFunc) {
	p := n.ListsProbe
	if !p.Failed() {
		return
	}
	why := "FR-007: the names in the lists are the names that k8s-pod.nix puts its conditions on, in systemd.services, so a list computed from config.systemd.services is an infinite recursion on k8s-pod.nix"
	if p.K8sPodModuleSkipped {
		why += "; podroles checked the node without the k8s-pod module for that reason"
	}
	fix := "compute the list from the application's own options (e.g. its processes), never from config.systemd.services"
	if p.RoleNames {
		report(option("fediversity.podRoles.roles"), at(opt(podRolesPath("roles")...)), "fediversity.podRoles.roles, the set of roles itself, reads config.systemd.services: %s; %s", why, fix)
	}
	for _, r := range p.Roles {
		o := fmt.Sprintf("fediversity.podRoles.roles.%s.units", facts.AttrName(r))
		report(option(o), at(roleOpt(r, "units")), "%s reads config.systemd.services: %s; %s", o, why, fix)
	}
	for _, l := range []struct {
		failed bool
		option string
		path   []string
	}{{p.MainUnits, "fediversity.podRoles.mainUnits", podRolesPath("mainUnits")}, {p.SharedUnits, "fediversity.podRoles.sharedUnits", podRolesPath("sharedUnits")}} {
		if l.failed {
			report(option(l.option), at(opt(l.path...)), "%s reads config.systemd.services: %s; %s", l.option, why, fix)
		}
	}
}

func namesHiddenByOwnK8sPodModule(n *node, report reportFunc) {
	for _, m := range n.K8sPod.HostModules {
		for _, u := range m.Units {
			var where place
			for _, l := range n.lists {
				if slices.Contains(l.units, u) {
					if len(where.first) == 0 {
						where = at(l.holding(u))
					} else {
						where = where.and(l.holding(u))
					}
				}
			}
			report(unit(u), where.and(opt("fediversity", "k8sPod", "enable")), "%s names unit %s, which is a unit only through %s, a module the node imports itself that puts it on k8s-pod.nix (fediversity.k8sPod.enable) and is not the k8s-pod module podroles was given; its definitions of %s set more than the condition it puts on every listed name, but nothing that runs, so podroles cannot tell a unit the module defines from that condition on a misspelled name, and FR-008 could not judge %s; check with --k8s-pod-module %s", joinAnd(n.listsNaming(u)), u, m.File, u, u, m.File)
		}
	}
}

// needsModules says why PR107 cannot judge a node that is no system of the
// module system.
func needsModules(n *facts.Node) string {
	if n.ListsProbe == nil {
		return "FR-008: the node is no system of the module system (lib.evalModules, lib.nixosSystem), whose definitions tell the modules that put a node on k8s-pod.nix apart"
	}
	return ""
}

func needsModuleSystem(n *facts.Node) string {
	if n.ListsProbe == nil {
		return "FR-007: the node is no system of the module system (lib.evalModules, lib.nixosSystem) with options and extendModules, so its lists cannot be probed"
	}
	return ""
}
