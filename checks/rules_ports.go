package checks

import (
	"fmt"

	"github.com/fediversity/podroles/facts"
)

// portRules judge the roles' ports (US2-6).
var portRules = []*Rule{
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

func portName(p facts.Port) string { return fmt.Sprintf("%d/%s", p.Port, p.Protocol) }

// validPort reports whether port is one of 1–65535 (PR602).
func validPort(port int) bool { return port >= 1 && port <= 65535 }
