package checks

import (
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
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

	// authelia as a role (Known Deviations).
	{
		ID: "PR511", Name: "authelia-loopback-host", Spec: "Known Deviations (authelia), SC-005", Severity: SeverityError, Scope: ScopeK8s,
		Doc: "A role runs authelia and fediversity.authelia.host is a loopback address.",
		check: autheliaCheck([]string{"host"}, func(a facts.Authelia) string {
			if isLoopback(a.Host) {
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
		if i, ok := n.unitIdx[u]; ok && n.units[i].added {
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
		if runner := n.rolesRunning(u); len(runner) > 0 {
			report(unit(u), at(opt("systemd", "services", u)), "unit %s is enabled and in no list, and role %s runs the image of the node; it is the unit of modular service %s, which role %s runs from the service's image, so no pod of the node's image may start it (US1-6): disable it on k8s-pod.nix (systemd.services.%s.enable = false)", u, roleName, u, runner[0], facts.AttrName(u))
			continue
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
			if (p.Protocol == facts.ProtocolTCP || p.Protocol == facts.ProtocolUDP) && !n.Firewall.Opens(p.Protocol, p.Port) {
				report(role(name), at(portOpt(name, p)), "role %s runs the image of the node and has port %d/%s, which the node's firewall does not open, so the pod's firewall would drop its connections; add %d to networking.firewall.allowed%sPorts", name, p.Port, p.Protocol, p.Port, p.Protocol)
			}
		}
	})
}

func metricsPortNotOpen(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.RunsNodeImage() && r.Metrics != nil && !n.Firewall.Opens(facts.ProtocolTCP, r.Metrics.Port) {
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
		if isLoopback(n.LLDAP.Host) {
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

// isLoopback reports whether host names this machine: localhost and its
// subdomains, or a loopback address.
func isLoopback(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if h == "" || h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "localhost.localdomain" || h == "ip6-localhost" || h == "ip6-loopback" {
		return true
	}
	addr, err := netip.ParseAddr(h)
	if err != nil {
		// The resolver also reads the short IPv4 forms: 127.1, 127.0.1,
		// 2130706433.
		addr, err = shortIPv4(h)
	}
	return err == nil && (addr.IsLoopback() || addr.IsUnspecified())
}

// shortIPv4 reads the forms inet_aton accepts with fewer than four decimal
// parts, the last part filling the remaining bytes.
func shortIPv4(s string) (netip.Addr, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, fmt.Errorf("not an IPv4 address")
	}
	var b [4]byte
	for i, p := range parts {
		last := i == len(parts)-1
		bits := 8
		if last {
			bits = 8 * (4 - i)
		}
		n, err := strconv.ParseUint(p, 10, bits)
		if err != nil || p == "" {
			return netip.Addr{}, fmt.Errorf("not an IPv4 address")
		}
		if !last {
			b[i] = byte(n)
			continue
		}
		for j := 3; j >= i; j-- {
			b[j] = byte(n)
			n >>= 8
		}
	}
	return netip.AddrFrom4(b), nil
}

func replicasBelowOne(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		if r.Replicas != nil && *r.Replicas < 1 {
			report(role(name), at(roleOpt(name, "replicas")), "role %s has %d replicas: a requested role has at least 1; to run no pods of it, drop the request", name, *r.Replicas)
		}
	})
}

func portName(p facts.Port) string { return fmt.Sprintf("%d/%s", p.Port, p.Protocol) }

func portOutOfRange(n *node, report reportFunc) {
	n.eachRole(func(name string, r facts.Role) {
		for _, p := range r.Ports {
			if p.Port < 1 || p.Port > 65535 {
				report(Subject{SubjectPort, portName(p)}, at(portOpt(name, p)), "role %s has port %s, outside 1–65535", name, portName(p))
			}
		}
		if m := r.Metrics; m != nil && (m.Port < 1 || m.Port > 65535) {
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
		if s.Encoding != nil && *s.Encoding != "base64" {
			report(secret(file), at(secretOpt(roleName, file, "encoding")), "secret %s of role %s has encoding %q; the only encoding is \"base64\" (or null for none)", file, roleName, *s.Encoding)
		}
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
	if n.NamedAfterFile {
		// The node's name was made up from a file name: hold only the
		// role names against Kubernetes.
		n.eachRole(func(name string, r facts.Role) {
			// The role name follows "<node>-", so it may start with -.
			problems := slices.DeleteFunc(dnsLabelProblems(name), func(p string) bool { return p == "it starts with -" })
			if r.Requested() && len(problems) > 0 {
				report(role(name), at(roleOpt(name)), "role %s makes a Deployment name <node>-%s, which is no DNS-1123 label: %s; rename the role", name, name, joinAnd(problems))
			}
		})
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
