package scenarios

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/fediversity/podroles/inventory"
)

// TestNothingToJudgeSkips: a scenario whose inventory and node leave it
// nothing to judge is skipped with the reason, not passed with a note.
func TestNothingToJudgeSkips(t *testing.T) {
	cases := []struct {
		id, want string
		change   func(inv *inventory.Inventory)
	}{
		{"units/units-where-their-lists-permit", "node directory lists no units (no role of the node's image, mainUnits nor sharedUnits has one): none to place",
			func(inv *inventory.Inventory) {
				w := inv.Facts.PodRoles.Roles["worker"]
				w.Units = nil
				inv.Facts.PodRoles.Roles["worker"] = w
			}},
		{"deployments/service-units-not-in-node-pods", "node directory has no role that runs a service's image: no unit of a service to look for",
			func(inv *inventory.Inventory) {
				for _, r := range []string{"lldap", "authelia"} {
					delete(inv.Facts.PodRoles.Roles, r)
				}
			}},
		{"postgres/data-outside-pod", "the inventory names no table of the role's data (postgres.usersTable): a connection alone proves nothing",
			func(inv *inventory.Inventory) { inv.Postgres.UsersTable = "" }},
		{"authelia/portal-login", "node directory has no role that runs authelia: the portal's upstream is not the node's to judge",
			func(inv *inventory.Inventory) { inv.Authelia = nil }},
	}
	for _, c := range cases {
		inv := zeroPodWorld(t)
		c.change(inv)
		results := Run(context.Background(), localWorld(t, inv), Suites(), Options{Patience: time.Second, Run: regexp.MustCompile("^" + regexp.QuoteMeta(c.id) + "$"), Disruptive: true})
		if len(results) != 1 || results[0].Status != Skipped || results[0].Reason != c.want {
			t.Errorf("%s: %+v\nwant skipped: %s", c.id, results, c.want)
		}
	}
}

// TestNodeSelectsTheLLDAPSuite: lldap's HTTP scenarios run where the node's
// role of the ldap contract runs lldap, whatever the inventory calls its
// pods, and skip only for a stand-in the inventory declares or a role that
// runs something else.
func TestNodeSelectsTheLLDAPSuite(t *testing.T) {
	inv := zeroPodWorld(t)
	if why := needsLLDAP(localWorld(t, inv)); why != "" {
		t.Errorf("a node whose role lldap runs lldap, no stand-in: skipped: %s", why)
	}
	inv.Roles["lldap"].StandIn = "slapd"
	if why, want := needsLLDAP(localWorld(t, inv)), "the pods of role lldap run slapd standing in for lldap (the inventory's standIn): lldap's HTTP API is not there"; why != want {
		t.Errorf("with a stand-in: %q, want %q", why, want)
	}
	inv.Roles["lldap"].StandIn = ""
	r := inv.Facts.PodRoles.Roles["lldap"]
	other := "kanidm"
	r.Service = &other
	inv.Facts.PodRoles.Roles["lldap"] = r
	if why, want := needsLLDAP(localWorld(t, inv)), "the node's role lldap runs kanidm, not lldap: lldap's HTTP API is not there"; why != want {
		t.Errorf("a role of another service: %q, want %q", why, want)
	}
}
