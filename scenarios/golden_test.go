package scenarios

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/golden"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/report"
	"github.com/fediversity/podroles/scenarios/world"
)

// TestGoldenReports: the three formats of a run's report, of scenarios
// that pass with notes, fail, are skipped, panic, and run exclusive (last),
// through the runner, are in testdata/reports; make docs rewrites them.
// The durations, the one thing that varies, are set to fixed values by
// name before the report is written.
func TestGoldenReports(t *testing.T) {
	ok := func(note string) func(context.Context, *State) error {
		return func(_ context.Context, s *State) error { s.Note("%s", note); return nil }
	}
	suites := []*Suite{
		{Name: "ldap", Doc: "binds", Scenarios: []*Scenario{
			{Name: "service-binds", Spec: []string{"SC-004", "US1-15"}, Doc: "binds at the Service", Steps: Checks(
				Check{Name: "dial", Do: ok("dialled directory-lldap at 127.0.1.10:6360")},
				Check{Name: "bind", Do: ok("bound as uid=authelia-bind,ou=people,dc=example,dc=com")},
			)},
			{Name: "wrong-ca-refused", Spec: []string{"US1-15"}, Doc: "a wrong CA is refused", Steps: Checks(
				Check{Name: "dial with another CA", Do: func(context.Context, *State) error {
					return errors.New("at 127.0.1.10:6360: expected a refused certificate; saw a verified handshake")
				}},
				Check{Name: "never", Do: ok("not reached")},
			)},
			{Name: "needs-lldap", Spec: []string{"SC-003"}, Skip: func(world.World) string { return "the inventory's role lldap runs slapd, not lldap" }},
			{Name: "panics", Spec: []string{"SC-004"}, Steps: Checks(Check{Name: "read", Do: func(context.Context, *State) error { panic("index out of range") }})},
		}},
		{Name: "rotation", Doc: "restarts", Scenarios: []*Scenario{
			{Name: "restart-secret-restarts", Spec: []string{"US1-13"}, Exclusive: true, Window: func(context.Context, world.World) (time.Duration, string) {
				return 5 * time.Second, "the agents' render interval 2s, and 3s for a restart to act"
			}, Steps: Checks(Check{Name: "write", Do: ok("wrote key-seed")})},
		}},
	}
	results := Run(context.Background(), world.Files(&inventory.Inventory{Node: "directory"}), suites, Options{Parallel: 2})
	for _, res := range results {
		res.Duration, res.Seconds = 1500*time.Millisecond, 1.5
		for i := range res.Steps {
			res.Steps[i].Seconds = 0.75
		}
	}
	rep := NewReport("directory", results)
	for _, format := range report.Formats {
		var b bytes.Buffer
		if err := rep.Write(&b, format); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "reports", "run."+format), b.Bytes())
	}
}
