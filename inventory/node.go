package inventory

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// Reconcile takes into the inventory what the node states: the ldap
// contract's role, host, CA file and reader's password file
// (fediversity.lldap.*), authelia's role, host and CA file
// (fediversity.authelia.*) and each role's secrets
// (fediversity.podRoles.roles.<r>.secrets). Where the inventory gives one
// of these with another value, it fails before any scenario runs, naming
// both values: a scenario must not judge the node by what the inventory
// says of it. It also fails for a contract the node leaves without what a
// reader needs (no TLS, no CA file, no password file).
func (inv *Inventory) Reconcile(n *facts.Node) error {
	var drift []string
	differ := func(field, got, option, want string) {
		if got != "" && got != want {
			drift = append(drift, fmt.Sprintf("%s is %q in the inventory, but the node's %s is %q", field, got, option, want))
		}
	}
	if inv.Node != n.Name {
		drift = append(drift, fmt.Sprintf("node is %q in the inventory, but the facts are of node %q", inv.Node, n.Name))
	}
	if l := inv.LDAP; l != nil {
		role := roleRunning(n, "lldap")
		if role == "" {
			return fmt.Errorf("the inventory has an ldap contract, but no requested role of node %s runs lldap (fediversity.podRoles.roles.<r>.service)", n.Name)
		}
		differ("ldap.role", l.Role, "role that runs lldap", role)
		differ("ldap.host", l.Host, "fediversity.lldap.host", n.LLDAP.Host)
		differ("ldap.caFile", l.CAFile, "fediversity.lldap.tls.caFile", deref(n.LLDAP.TLS.CAFile))
		differ("ldap.bindPasswordFile", l.BindPasswordFile, "fediversity.lldap.readerBindPasswordFile", deref(n.LLDAP.ReaderBindPasswordFile))
		switch {
		case !n.LLDAP.TLS.Enable:
			return fmt.Errorf("node %s: fediversity.lldap.tls.enable is false: the ldap contract gives a reader no LDAPS to verify (podroles check refuses such a node)", n.Name)
		case n.LLDAP.TLS.CAFile == nil:
			return fmt.Errorf("node %s: fediversity.lldap.tls.caFile is null: the ldap contract gives a reader no CA to verify the role with (podroles check refuses such a node)", n.Name)
		case n.LLDAP.ReaderBindPasswordFile == nil:
			return fmt.Errorf("node %s: fediversity.lldap.readerBindPasswordFile is null: the ldap contract gives a reader no password file to bind with", n.Name)
		}
		l.Role, l.Host, l.CAFile, l.BindPasswordFile = role, n.LLDAP.Host, *n.LLDAP.TLS.CAFile, *n.LLDAP.ReaderBindPasswordFile
		drift = append(drift, l.reconcilePorts(n, role)...)
	}
	if role := roleRunning(n, "authelia"); role != "" {
		a := inv.Authelia
		if a == nil {
			a = &Authelia{}
		}
		differ("authelia.role", a.Role, "role that runs authelia", role)
		differ("authelia.host", a.Host, "fediversity.authelia.host", n.Authelia.Host)
		differ("authelia.caFile", a.CAFile, "fediversity.authelia.caFile", deref(n.Authelia.CAFile))
		inv.Authelia = &Authelia{Role: role, Host: n.Authelia.Host, CAFile: deref(n.Authelia.CAFile)}
	} else if inv.Authelia != nil {
		drift = append(drift, fmt.Sprintf("authelia is in the inventory, but no requested role of node %s runs authelia", n.Name))
	}
	for _, name := range slices.Sorted(maps.Keys(inv.Roles)) {
		r := inv.Roles[name]
		if name == MainRole || r == nil {
			continue
		}
		role, ok := n.PodRoles.Roles[name]
		if !ok || !role.Requested() {
			drift = append(drift, fmt.Sprintf("roles.%s is in the inventory, but node %s requests no role %s", name, n.Name, name))
			continue
		}
		if r.Secrets != nil {
			drift = append(drift, secretsDrift(name, r.Secrets, role.Secrets)...)
		}
		r.Secrets = role.Secrets
	}
	if len(drift) > 0 {
		return fmt.Errorf("the inventory and node %s disagree, and the node is the truth: %s", n.Name, strings.Join(drift, "; "))
	}
	inv.Facts = n
	return nil
}

// reconcilePorts takes the ports of lldap that the node states (the
// variables of fediversity.podRoles.services.lldap.environment) into the
// contract, and names each that the inventory gives otherwise; the LDAPS
// port must also be one of the role's ports, which its Service has.
func (l *LDAP) reconcilePorts(n *facts.Node, role string) []string {
	var drift []string
	vars := n.PodRoles.Services["lldap"].Variables
	// The variables of lldap's image that state its ports.
	stated := []struct {
		field, variable string
		port            *int
	}{
		{"ldap.port", "LLDAP_LDAPS_OPTIONS__PORT", &l.Port},
		{"ldap.plainPort", "LLDAP_LDAP_PORT", &l.PlainPort},
		{"ldap.httpPort", "LLDAP_HTTP_PORT", &l.HTTPPort},
	}
	for _, pv := range stated {
		value, ok := vars[pv.variable]
		port, err := strconv.Atoi(value)
		if !ok || err != nil {
			continue
		}
		if *pv.port != 0 && *pv.port != port {
			drift = append(drift, fmt.Sprintf("%s is %d in the inventory, but the node's fediversity.podRoles.services.lldap.environment.%s is %q", pv.field, *pv.port, pv.variable, value))
		}
		*pv.port = port
	}
	ports := n.PodRoles.Roles[role].Ports
	if l.Port != 0 && len(ports) > 0 && !slices.ContainsFunc(ports, func(p facts.Port) bool { return p.Port == l.Port }) {
		var listed []string
		for _, p := range ports {
			listed = append(listed, strconv.Itoa(p.Port))
		}
		drift = append(drift, fmt.Sprintf("ldap.port is %d, but it is none of the node's fediversity.podRoles.roles.%s.ports (%s), which the role's Service has", l.Port, facts.AttrName(role), strings.Join(listed, ", ")))
	}
	return drift
}

// roleRunning is the first requested role of the node that runs the
// modular service s, or "".
func roleRunning(n *facts.Node, s string) string {
	for _, r := range n.RoleNames() {
		if role := n.PodRoles.Roles[r]; role.Requested() && role.RunsService(s) {
			return r
		}
	}
	return ""
}

// secretsDrift names each secret of a role whose definition in the
// inventory is not the node's, with both.
func secretsDrift(role string, got, want map[string]facts.Secret) []string {
	var out []string
	all := maps.Clone(want)
	maps.Copy(all, got)
	for _, f := range slices.Sorted(maps.Keys(all)) {
		g, inInv := got[f]
		w, inNode := want[f]
		option := fmt.Sprintf("fediversity.podRoles.roles.%s.secrets.%s", facts.AttrName(role), facts.AttrName(f))
		switch {
		case !inNode:
			out = append(out, fmt.Sprintf("roles.%s.secrets.%s is in the inventory, but the node has no %s", role, f, option))
		case !inInv:
			out = append(out, fmt.Sprintf("roles.%s.secrets lacks %s, which the node has as %s", role, f, option))
		case !secretEqual(g, w):
			out = append(out, fmt.Sprintf("roles.%s.secrets.%s is %s in the inventory, but the node's %s is %s", role, f, secretJSON(g), option, secretJSON(w)))
		}
	}
	return out
}

func secretEqual(a, b facts.Secret) bool { return secretJSON(a) == secretJSON(b) }

// secretJSON writes a secret on one line, its fields in a fixed order (the
// parameters' keys sorted), for comparing and for an error.
func secretJSON(s facts.Secret) string {
	data, _ := json.Marshal(s)
	return string(data)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
