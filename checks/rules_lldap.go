package checks

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/loopback"
)

// lldapRules judge lldap as a role (US2-10, Known Deviations).
var lldapRules = []*Rule{
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
