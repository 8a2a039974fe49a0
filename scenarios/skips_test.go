package scenarios

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/fediversity/podroles/scenarios/inventory"
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
		results := Run(context.Background(), inv, Suites(), Options{Patience: time.Second, Run: regexp.MustCompile("^" + regexp.QuoteMeta(c.id) + "$")})
		if len(results) != 1 || results[0].Status != Skipped || results[0].Reason != c.want {
			t.Errorf("%s: %+v\nwant skipped: %s", c.id, results, c.want)
		}
	}
}
