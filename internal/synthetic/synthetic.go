// Package synthetic makes large, correct nodes for benchmarks. It makes
// the same node as Nix text, for nix to evaluate, and as facts, for the
// rules.
package synthetic

import (
	"fmt"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// Shape sizes a synthetic node on k8s-pod.nix: one unit in a hundred is a
// platform unit, one shared, the rest split evenly over roles of the node's
// image and mainUnits; every role has a port and a metrics port that the
// firewall opens.
type Shape struct {
	Name  string
	Units int
	Roles int
}

func (s Shape) unit(i int) string { return fmt.Sprintf("app-unit-%04d", i) }
func (s Shape) role(r int) string { return fmt.Sprintf("role%02d", r) }

// Where a unit goes.
const (
	inMain     = -1
	inShared   = -2
	inPlatform = -3
)

// roleOf returns the role of unit i, or where else it goes.
func (s Shape) roleOf(i int) int {
	switch {
	case i == 0:
		return inShared
	case i%100 == 99:
		return inPlatform
	}
	perRole := s.Units / (s.Roles + 1)
	if r := (i - 1) / max(perRole, 1); r < s.Roles {
		return r
	}
	return inMain
}

// Nix returns the node as a .nix file's text.
func (s Shape) Nix() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  networking.hostName = %q;\n  networking.firewall.allowedTCPPortRanges = [ { from = 8000; to = 9999; } ];\n", s.Name)
	b.WriteString("  fediversity.k8sPod.enable = true;\n  systemd.services = {\n")
	for i := 0; i < s.Units; i++ {
		fmt.Fprintf(&b, "    %s = { script = \"exec /run/current-system/sw/bin/app %d\"; };\n", s.unit(i), i)
	}
	b.WriteString("  };\n")
	lists := map[int][]string{}
	for i := 0; i < s.Units; i++ {
		lists[s.roleOf(i)] = append(lists[s.roleOf(i)], fmt.Sprintf("%q", s.unit(i)))
	}
	for r := 0; r < s.Roles; r++ {
		fmt.Fprintf(&b, "  fediversity.podRoles.roles.%s = { replicas = 2; units = [ %s ]; ports = [ { port = %d; } ]; metrics.port = %d; };\n",
			s.role(r), strings.Join(lists[r], " "), 8000+r, 9000+r)
	}
	fmt.Fprintf(&b, "  fediversity.podRoles.mainUnits = [ %s ];\n", strings.Join(lists[inMain], " "))
	fmt.Fprintf(&b, "  fediversity.podRoles.sharedUnits = [ %s ];\n", strings.Join(lists[inShared], " "))
	fmt.Fprintf(&b, "  fediversity.k8sPod.platformUnits = [ %s ];\n}\n", strings.Join(lists[inPlatform], " "))
	return b.String()
}

// Facts returns the node's facts, as extraction would give them.
func (s Shape) Facts() *facts.Node {
	two := 2
	n := &facts.Node{
		Name: s.Name, Source: "synthetic", Units: map[string]facts.Unit{},
		Firewall: facts.Firewall{Enable: true, PortLists: facts.PortLists{AllowedTCPPortRanges: []facts.PortRange{{From: 8000, To: 9999}}}},
		PodRoles: facts.PodRoles{Roles: map[string]facts.Role{}},
		K8sPod:   facts.K8sPod{Enable: true},
		LLDAP:    facts.LLDAP{Host: "localhost"},
		Authelia: facts.Authelia{Host: "localhost"},
	}
	roleUnits := map[int][]string{}
	for i := 0; i < s.Units; i++ {
		n.Units[s.unit(i)] = facts.Unit{Enable: true}
		roleUnits[s.roleOf(i)] = append(roleUnits[s.roleOf(i)], s.unit(i))
	}
	for r := 0; r < s.Roles; r++ {
		n.PodRoles.Roles[s.role(r)] = facts.Role{
			Replicas: &two, Units: roleUnits[r],
			Ports:   []facts.Port{{Port: 8000 + r, Protocol: facts.ProtocolTCP}},
			Metrics: &facts.Metrics{Port: 9000 + r, Path: "/metrics"},
		}
	}
	n.PodRoles.MainUnits, n.PodRoles.SharedUnits = roleUnits[inMain], roleUnits[inShared]
	n.K8sPod.PlatformUnits = roleUnits[inPlatform]
	return n
}
