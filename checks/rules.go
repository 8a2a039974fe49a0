package checks

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/loopback"
)

// Rules returns every rule, in ID order.
func Rules() []*Rule { return rules }

var rules = []*Rule{
	// Names of units (FR-008): on every method, once a node has a request.
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

	// Roles (US2-3, US2-4, US2-7, US2-9).
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

	// Secrets (US2-5, US2-8, US2-12).
	{
		ID: "PR301", Name: "secrets-without-service", Spec: "US2-5, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role of the node's image has secrets; its pods get secrets from their own units.",
		check: secretsWithoutService,
	},
	{
		ID: "PR302", Name: "secret-not-a-file-name", Spec: "US2-5, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret's name is not the name of a file in /run/secrets.",
		check: secretNotAFileName,
	},
	{
		ID: "PR303", Name: "template-with-field", Spec: "US2-8, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret has a template and also a field, an encoding or a variable.",
		check: templateWithField,
	},
	{
		ID: "PR304", Name: "parameters-without-template", Spec: "US2-12, FR-009", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A secret has parameters but no template.",
		check: parametersWithoutTemplate,
	},

	// Ports (US2-6).
	{
		ID: "PR401", Name: "port-not-open", Spec: "US2-6, FR-010", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role of the node's image has a port that the node's firewall does not open.",
		check: portNotOpen,
	},
	{
		ID: "PR402", Name: "metrics-port-not-open", Spec: "US2-6, FR-010a", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role of the node's image has a metrics port that the node's firewall does not open.",
		check: metricsPortNotOpen,
	},

	// lldap as a role (US2-10, Known Deviations).
	{
		ID: "PR501", Name: "lldap-without-companion", Spec: "US2-10", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap without the companion that provisions it.",
		check: lldapWithoutCompanion,
	},
	{
		ID: "PR502", Name: "lldap-loopback-host", Spec: "US2-10", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap and fediversity.lldap.host is a loopback address.",
		check: lldapLoopbackHost,
	},
	{
		ID: "PR503", Name: "lldap-reader-password-in-run-secrets", Spec: "US2-10", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap and fediversity.lldap.readerBindPasswordFile is a file in /run/secrets.",
		check: lldapReaderPasswordInRunSecrets,
	},
	{
		ID: "PR504", Name: "lldap-without-tls", Spec: "US2-10", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap without fediversity.lldap.tls.enable or fediversity.lldap.tls.caFile.",
		check: lldapWithoutTLS,
	},
	{
		ID: "PR505", Name: "lldap-state-migration", Spec: "Known Deviations (lldap)", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap on a node with systemd.stateMigrations.lldap, which cannot stop the role's pods.",
		check: lldapStateMigration,
	},
	{
		ID: "PR506", Name: "lldap-provision-in-main-pod", Spec: "Known Deviations (lldap)", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap, and the unit lldap-provision is in a list, or enabled and would start in the main pod.",
		check: lldapProvisionStarted,
	},
	{
		ID: "PR507", Name: "lldap-plain-ldap-port", Spec: "SC-004, Known Deviations (lldap)", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap and has a port of plain LDAP (389 or 3890) among its ports or as its metrics port.",
		check: lldapPlainLDAPPort,
	},
	{
		ID: "PR508", Name: "lldap-host-not-service", Spec: "US2-10, SC-004, Known Deviations (lldap)", Severity: SeverityError, Scope: ScopeK8s,
		Doc:   "A role runs lldap and fediversity.lldap.host is not the name of the role's Service (<node>-<role>, optionally followed by its namespace and cluster domain), or the role has no ports and so no Service.",
		check: lldapHostNotService,
	},

	// authelia as a role (Known Deviations).
	{
		ID: "PR511", Name: "authelia-loopback-host", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.host is a loopback address.",
		check: autheliaCheck([]string{"host"}, func(a facts.Authelia) string {
			if loopback.Is(a.Host) {
				return fmt.Sprintf("fediversity.authelia.host is %q, a loopback address: the nginx of the main pod cannot reach the role there; set it to the name of the role's Service", a.Host)
			}
			return ""
		}),
	},
	{
		ID: "PR512", Name: "authelia-without-ca-file", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.caFile is null.",
		check: autheliaCheck([]string{"caFile"}, func(a facts.Authelia) string {
			if a.CAFile == nil {
				return "fediversity.authelia.caFile is null: nginx cannot verify the role's HTTPS certificate; set it to the CA file of OpenBao's PKI engine"
			}
			return ""
		}),
	},
	{
		ID: "PR513", Name: "authelia-local-storage", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia with fediversity.authelia.storage.local: a file in a pod is lost with the pod.",
		check: autheliaCheck([]string{"storage", "local"}, func(a facts.Authelia) string {
			if a.Storage.Local != nil {
				return fmt.Sprintf("fediversity.authelia.storage.local keeps logins in %s, a file of the pod that is lost with it; use fediversity.authelia.storage.postgres", a.Storage.Local.Path)
			}
			return ""
		}),
	},
	{
		ID: "PR514", Name: "authelia-without-smtp", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.smtp is null.",
		check: autheliaCheck([]string{"smtp"}, func(a facts.Authelia) string {
			if !a.SMTP {
				return "fediversity.authelia.smtp is null: without a mail server authelia notifies through a file of the pod; set fediversity.authelia.smtp"
			}
			return ""
		}),
	},
	{
		ID: "PR515", Name: "authelia-forward-auth", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia with fediversity.authelia.forwardAuth.enable.",
		check: autheliaCheck([]string{"forwardAuth", "enable"}, func(a facts.Authelia) string {
			if a.ForwardAuth.Enable {
				return "fediversity.authelia.forwardAuth.enable is true, which a role of authelia does not support; set it to false"
			}
			return ""
		}),
	},

	// Input that no method can deploy: every node.
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
var runOncePatterns = regexp.MustCompile(`^acme-|(^|[-_@.])(init|initdb|setup|migrate|migrations?|provision|bootstrap)([-_@.]|$)`)

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

func secretsWithoutService(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.RunsNodeImage() && len(r.Secrets) > 0 {
			report(role(name), at(roleOpt(name, "secrets")), "role %s runs the image of the node and has secrets (%s): its pods get secrets from OpenBao through their own units; remove them or give the role a service", name, joinAnd(slices.Sorted(maps.Keys(r.Secrets))))
		}
	})
}

func secretNotAFileName(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, _ facts.Secret) {
		if file == "" || file == "." || file == ".." || strings.ContainsAny(file, "/\x00") {
			report(secret(file), at(secretOpt(roleName, file)), "secret %q of role %s is not the name of a file in /run/secrets; name it as a file, with no / and not . or ..", file, roleName)
		}
	})
}

func templateWithField(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if s.Template == nil {
			return
		}
		var also []string
		for _, f := range []struct {
			name string
			set  bool
		}{{"field", s.Field != nil}, {"encoding", s.Encoding != nil}, {"variable", s.Variable != nil}} {
			if f.set {
				also = append(also, f.name)
			}
		}
		if len(also) > 0 {
			var fields []facts.OptionRef
			for _, field := range also {
				fields = append(fields, secretOpt(roleName, file, field))
			}
			where := at(append(fields, secretOpt(roleName, file))...).and(secretOpt(roleName, file, "template"))
			report(secret(file), where, "secret %s of role %s has a template and also %s: a template replaces them; remove %s", file, roleName, joinAnd(also), joinAnd(also))
		}
	})
}

func parametersWithoutTemplate(n *node, report reportFunc) {
	n.eachSecret(func(roleName, file string, s facts.Secret) {
		if len(s.Parameters) > 0 && s.Template == nil {
			report(secret(file), at(secretOpt(roleName, file, "template"), secretOpt(roleName, file, "parameters"), secretOpt(roleName, file)), "secret %s of role %s has parameters but no template: parameters go with a template over the response of the engine; add the template or remove the parameters", file, roleName)
		}
	})
}

func portNotOpen(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if !r.RunsNodeImage() {
			return
		}
		for _, p := range r.Ports {
			// A port outside 1–65535 is PR602's: no firewall can open it.
			if (p.Protocol == facts.ProtocolTCP || p.Protocol == facts.ProtocolUDP) && validPort(p.Port) && !n.Firewall.Opens(p.Protocol, p.Port) {
				report(role(name), at(portOpt(name, p)), "role %s runs the image of the node and has port %d/%s, which the node's firewall does not open, so the pod's firewall would drop its connections; add %d to networking.firewall.allowed%sPorts", name, p.Port, p.Protocol, p.Port, p.Protocol)
			}
		}
	})
}

func metricsPortNotOpen(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.RunsNodeImage() && r.Metrics != nil && validPort(r.Metrics.Port) && !n.Firewall.Opens(facts.ProtocolTCP, r.Metrics.Port) {
			report(role(name), at(roleOpt(name, "metrics", "port"), roleOpt(name, "metrics")), "role %s runs the image of the node and has metrics port %d, which the node's firewall does not open, so the main pod could not scrape it; add %d to networking.firewall.allowedTCPPorts", name, r.Metrics.Port, r.Metrics.Port)
		}
	})
}

// eachRoleRunning calls f for each role that runs modular service s.
func (n *node) eachRoleRunning(s string, f func(name string, r facts.Role)) {
	for _, name := range n.rolesRunning(s) {
		f(name, n.PodRoles.Roles[name])
	}
}

func lldapWithoutCompanion(n *node, report reportFunc) {
	n.eachRoleRunning("lldap", func(name string, r facts.Role) {
		if !r.Companion {
			report(role(name), at(roleOpt(name, "companion"), roleOpt(name, "service")), "role %s runs lldap without a companion: the companion does the work of lldap-provision, which the main pod does not start; set companion to true", name)
		}
	})
}

func lldapLoopbackHost(n *node, report reportFunc) {
	n.eachRoleRunning("lldap", func(name string, _ facts.Role) {
		if loopback.Is(n.LLDAP.Host) {
			report(role(name), at(opt("fediversity", "lldap", "host"), roleOpt(name, "service")), "role %s runs lldap but fediversity.lldap.host is %q, a loopback address that readers in other pods cannot reach; set it to the name of the role's Service", name, n.LLDAP.Host)
		}
	})
}

func lldapReaderPasswordInRunSecrets(n *node, report reportFunc) {
	n.eachRoleRunning("lldap", func(name string, _ facts.Role) {
		if f := n.LLDAP.ReaderBindPasswordFile; f != nil && inRunSecrets(*f) {
			report(role(name), at(opt("fediversity", "lldap", "readerBindPasswordFile")), "role %s runs lldap but fediversity.lldap.readerBindPasswordFile is %s: the sidecar writes /run/secrets only in the role's pods, so readers elsewhere lack the file; render it from the KV entry of the bind password outside /run/secrets", name, *f)
		}
	})
}

// inRunSecrets reports whether path names a file in /run/secrets, however
// it is spelled (/run//secrets/x, /run/secrets/../secrets/x).
func inRunSecrets(path string) bool {
	clean := filepath.Clean(path)
	return clean == "/run/secrets" || strings.HasPrefix(clean, "/run/secrets/")
}

func lldapWithoutTLS(n *node, report reportFunc) {
	n.eachRoleRunning("lldap", func(name string, _ facts.Role) {
		var missing []string
		var where []facts.OptionRef
		if !n.LLDAP.TLS.Enable {
			missing = append(missing, "fediversity.lldap.tls.enable is false")
			where = append(where, opt("fediversity", "lldap", "tls", "enable"))
		}
		if n.LLDAP.TLS.CAFile == nil {
			missing = append(missing, "fediversity.lldap.tls.caFile is null")
			where = append(where, opt("fediversity", "lldap", "tls", "caFile"))
		}
		if len(missing) > 0 {
			report(role(name), at(append(where, roleOpt(name, "service"))...), "role %s runs lldap but %s: readers reach the role over LDAPS and verify it with the CA file; enable TLS and give the CA file", name, joinAnd(missing))
		}
	})
}

func lldapStateMigration(n *node, report reportFunc) {
	if !slices.Contains(n.StateMigrations, "lldap") {
		return
	}
	n.eachRoleRunning("lldap", func(name string, _ facts.Role) {
		report(role(name), at(opt("systemd", "stateMigrations", "lldap")).and(roleOpt(name, "service")), "role %s runs lldap but the node has systemd.stateMigrations.lldap, which stops the unit lldap and not the role's pods; finish the migration before lldap runs as a role", name)
	})
}

// autheliaCheck makes a rule that refuses each role that runs authelia when
// problem, given the node's authelia options, says what is wrong with the
// option fediversity.authelia.<option>.
func autheliaCheck(option []string, problem func(facts.Authelia) string) func(*node, reportFunc) {
	return func(n *node, report reportFunc) {
		n.eachRoleRunning("authelia", func(name string, _ facts.Role) {
			if p := problem(n.Authelia); p != "" {
				report(role(name), at(opt(append([]string{"fediversity", "authelia"}, option...)...), roleOpt(name, "service")), "role %s runs authelia but %s", name, p)
			}
		})
	}
}

func replicasBelowOne(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Replicas != nil && *r.Replicas < 1 {
			report(role(name), at(roleOpt(name, "replicas")), "role %s has %d replicas: a requested role has at least 1; to run no pods of it, drop the request", name, *r.Replicas)
		}
	})
}

func portName(p facts.Port) string { return fmt.Sprintf("%d/%s", p.Port, p.Protocol) }

// validPort reports whether port is one of 1–65535 (PR602).
func validPort(port int) bool { return port >= 1 && port <= 65535 }

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

// lldapProvision is the unit whose work the companion of a role that runs
// lldap does (Known Deviations).
const lldapProvision = "lldap-provision"

// refusedAsLLDAPProvision reports whether PR506 refuses unit u.
func (n *node) refusedAsLLDAPProvision(u unitInfo) bool {
	return u.name == lldapProvision && len(n.rolesRunning("lldap")) > 0 && u.enable && !u.added
}

func lldapProvisionStarted(n *node, report reportFunc) {
	roles := n.rolesRunning("lldap")
	if len(roles) == 0 {
		return
	}
	why := fmt.Sprintf("role %s runs lldap, and its companion does the work of lldap-provision: the main pod must not start the unit, which would try again without end and keep the main pod from becoming ready", roles[0])
	if labels := n.listsNaming(lldapProvision); len(labels) > 0 {
		var lists []facts.OptionRef
		for _, label := range labels {
			lists = append(lists, n.listLabelled(label).holding(lldapProvision))
		}
		report(unit(lldapProvision), at(lists...).and(opt("systemd", "services", lldapProvision)), "unit lldap-provision is in %s, but %s; remove it from %s, and disable it on k8s-pod.nix (systemd.services.lldap-provision.enable = false)", joinAnd(labels), why, joinAnd(labels))
		return
	}
	if idx, ok := n.unitIdx[lldapProvision]; ok && n.refusedAsLLDAPProvision(n.units[idx]) {
		where := n.runsInNodeImage(lldapProvision)
		report(unit(lldapProvision), at(opt("systemd", "services", lldapProvision, "enable"), opt("systemd", "services", lldapProvision)), "unit lldap-provision is enabled and %s, but %s; disable it on k8s-pod.nix (systemd.services.lldap-provision.enable = false, e.g. under lib.mkIf config.fediversity.k8sPod.enable)", strings.TrimPrefix(where, "it is "), why)
	}
}

// plainLDAPPorts are the ports of plain LDAP: LDAP's own, and lldap's
// default ldap_port.
var plainLDAPPorts = map[int]bool{389: true, 3890: true}

func lldapPlainLDAPPort(n *node, report reportFunc) {
	n.eachRoleRunning("lldap", func(name string, r facts.Role) {
		for _, p := range r.Ports {
			if plainLDAPPorts[p.Port] && p.Protocol == facts.ProtocolTCP {
				report(Subject{SubjectPort, portName(p)}, at(portOpt(name, p)), "role %s runs lldap and has port %s, a port of plain LDAP: only LDAPS may be on the role's Service (SC-004), or readers could bind in the clear; remove it from fediversity.podRoles.roles.%s.ports (lldap's LDAPS port is 6360)", name, portName(p), facts.AttrName(name))
			}
		}
		if m := r.Metrics; m != nil && plainLDAPPorts[m.Port] {
			metrics := facts.Port{Port: m.Port, Protocol: facts.ProtocolTCP}
			report(Subject{SubjectPort, portName(metrics)}, at(roleOpt(name, "metrics", "port"), roleOpt(name, "metrics")), "role %s runs lldap and has metrics port %s, a port of plain LDAP, which the role's Service would carry (SC-004); give lldap's metrics another port", name, portName(metrics))
		}
	})
}

func lldapHostNotService(n *node, report reportFunc) {
	roles := n.rolesRunning("lldap")
	if len(roles) == 0 || loopback.Is(n.LLDAP.Host) {
		return // PR502 names a loopback host
	}
	host := strings.ToLower(strings.TrimSuffix(n.LLDAP.Host, "."))
	first, suffix, dotted := strings.Cut(host, ".")
	if dotted && !validSuffix(suffix) {
		first = "" // no Service name is followed by an empty label
	}
	for _, r := range roles {
		service := strings.ToLower(n.Name + "-" + r)
		matches := first == service || n.NamedAfterFile && strings.HasSuffix(first, "-"+strings.ToLower(r))
		if !matches {
			continue
		}
		if len(n.PodRoles.Roles[r].Ports) == 0 {
			report(role(r), at(roleOpt(r, "ports"), roleOpt(r)).and(opt("fediversity", "lldap", "host")), "role %s runs lldap and fediversity.lldap.host names its Service %s, but the role has no ports, so the method makes no Service for readers to reach; give the role its LDAPS port (6360)", r, service)
		}
		return
	}
	want := n.Name + "-" + roles[0]
	if n.NamedAfterFile {
		want = "<node>-" + roles[0] // the node's name was made up from its file
	}
	report(role(roles[0]), at(opt("fediversity", "lldap", "host"), roleOpt(roles[0], "service")), "role %s runs lldap, but fediversity.lldap.host is %q, which is not the name of the role's Service, %s (or %s.<namespace>.svc.cluster.local): readers in other pods reach the role only there, over LDAPS with a certificate for that name (US2-10, SC-004); set it to %s.<namespace>.svc.cluster.local", roles[0], n.LLDAP.Host, want, want, want)
}

// validSuffix reports whether s is one or more DNS labels (a namespace, a
// cluster domain).
func validSuffix(s string) bool {
	for _, label := range strings.Split(s, ".") {
		if len(dnsLabelProblems(label)) > 0 {
			return false
		}
	}
	return true
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
