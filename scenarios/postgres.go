package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// The postgres suite: the role keeps its data in a Postgres out of its
// pods, and the companion of lldap keeps exactly one OpenTofu state there
// (SC-003, Known Deviations).
var postgresSuite = &Suite{
	Name: "postgres",
	Doc:  "the role's data is in a Postgres out of the pods, with one OpenTofu state of the companion",
	Scenarios: []*Scenario{
		{
			Name: "data-outside-pod",
			Spec: []string{"SC-003"},
			Doc:  "the role's database is on a host that is none of the role's pods, and holds its users",
			Skip: needsUsersTable,
			Uses: usesNothing,
			Steps: Checks(
				Check{Name: "the database is not in a pod of the role", Do: databaseOutsidePods},
				Check{Name: "the database holds the role's users", Do: databaseHoldsUsers},
			),
		},
		{
			Name:  "one-opentofu-state",
			Spec:  []string{"SC-003"},
			Doc:   "the schema of the companion holds exactly one OpenTofu state, with the values of its objects",
			Skip:  needsPostgres,
			Uses:  usesNothing,
			Steps: Checks(Check{Name: "exactly one state in the schema", Do: oneOpenTofuState}),
		},
	},
}

// databaseHoldsUsers finds the contract's user in the role's users table.
func databaseHoldsUsers(ctx context.Context, s *State) error {
	p := s.Inv.Postgres
	user := s.Inv.LDAP.User
	return withDatabase(ctx, s, fmt.Sprintf("the user %s in table %s", user, p.UsersTable), func(ctx context.Context, db *pgx.Conn) error {
		var n int
		q := fmt.Sprintf("SELECT count(*) FROM %s WHERE user_id = $1", pgx.Identifier{p.UsersTable}.Sanitize())
		if err := db.QueryRow(ctx, q, user).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return poll.Saw("%d rows for %s", n, user)
		}
		s.Note("table %s holds %s", p.UsersTable, user)
		return nil
	})
}

func needsPostgres(inv *inventory.Inventory) string {
	if inv.Postgres == nil {
		return "the inventory has no postgres"
	}
	return ""
}

// needsUsersTable says why the role's data cannot be looked for: a
// database that only answers proves nothing of where the role keeps it.
func needsUsersTable(inv *inventory.Inventory) string {
	switch {
	case inv.Postgres == nil:
		return "the inventory has no postgres"
	case inv.Postgres.UsersTable == "":
		return "the inventory names no table of the role's data (postgres.usersTable): a connection alone proves nothing"
	case inv.LDAP == nil:
		return "the inventory has no ldap contract, whose user (ldap.user) the table of the role's data must hold"
	}
	return ""
}

// dsn reads the connection string from its file.
func dsn(s *State) (*url.URL, string, error) { return readDSN(s.Inv.Postgres.DSNFile) }

// readDSN reads a connection string from its file. Its errors never quote
// it: it holds a password.
func readDSN(file string) (*url.URL, string, error) {
	raw, err := inventory.ReadSecret(file)
	if err != nil {
		return nil, "", poll.Permanent(err)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, "", poll.Permanent(fmt.Errorf("%s holds no postgres:// URL", file))
	}
	return u, raw, nil
}

func databaseOutsidePods(ctx context.Context, s *State) error {
	// With no pod to compare, the database could be in any of them.
	pods, err := podsOf(s.Inv, s.Inv.Postgres.Role)
	if err != nil {
		return err
	}
	u, _, err := dsn(s)
	if err != nil {
		return err
	}
	host := u.Hostname()
	for _, pod := range pods {
		if host == pod.Address || host == pod.Name {
			return fmt.Errorf("the database is at %s, in pod %s of role %s: its data would go with the pod", host, pod.Name, s.Inv.Postgres.Role)
		}
	}
	// Other loopback addresses stand for other hosts in the local
	// environment; these three are the pod itself.
	if host == "localhost" || host == "127.0.0.1" || host == "::1" {
		return fmt.Errorf("the database is at %s, in the pod itself: its data would go with the pod", host)
	}
	s.Note("the database is at %s, none of the role's pods", u.Host)
	return nil
}

// withDatabase connects with the DSN and waits until check passes.
func withDatabase(ctx context.Context, s *State, expect string, check func(context.Context, *pgx.Conn) error) error {
	u, raw, err := dsn(s)
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: u.Redacted(), Expect: expect, Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		db, err := pgx.Connect(ctx, raw)
		if err != nil {
			return err
		}
		defer db.Close(context.WithoutCancel(ctx))
		return check(ctx, db)
	})
}

func oneOpenTofuState(ctx context.Context, s *State) error {
	schema := s.Inv.Postgres.Schema
	if schema == "" {
		schema = "lldap_provision"
	}
	table := pgx.Identifier{schema, "states"}.Sanitize()
	return withDatabase(ctx, s, "exactly one OpenTofu state in "+table, func(ctx context.Context, db *pgx.Conn) error {
		rows, err := db.Query(ctx, "SELECT name, data FROM "+table+" ORDER BY name")
		if err != nil {
			return err
		}
		type state struct{ name, data string }
		states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (state, error) {
			var st state
			err := row.Scan(&st.name, &st.data)
			return st, err
		})
		if err != nil {
			return err
		}
		if len(states) != 1 {
			var names []string
			for _, st := range states {
				names = append(names, st.name)
			}
			return poll.Saw("%d states (%s)", len(states), strings.Join(names, ", "))
		}
		var tf struct {
			Version   int    `json:"version"`
			Lineage   string `json:"lineage"`
			Resources []struct {
				Type string `json:"type"`
			} `json:"resources"`
		}
		if err := json.Unmarshal([]byte(states[0].data), &tf); err != nil || tf.Version == 0 || tf.Lineage == "" {
			return poll.Saw("state %q that is no OpenTofu state (%v)", states[0].name, err)
		}
		s.Note("one state %q: version %d, lineage %s, %d resources", states[0].name, tf.Version, tf.Lineage, len(tf.Resources))
		return nil
	})
}
