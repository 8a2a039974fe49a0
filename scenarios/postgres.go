package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// The postgres suite: the role keeps its data in a Postgres out of its
// pods, and the companion of lldap keeps exactly one OpenTofu state there
// (SC-003, Known Deviations).
var postgresSuite = &Suite{
	Name: "postgres",
	Doc:  "the role's data is in a Postgres out of the pods, with one OpenTofu state of the companion",
	Scenarios: []*Scenario{
		{
			Name:   "data-outside-pod",
			Spec:   []string{"SC-003"},
			Doc:    "the database URL the role's pods read leads to none of the node's pods, and to one database for all of them, which holds the role's users",
			Skip:   needsUsersTable,
			Seeded: seededByStandIn,
			Uses:   databaseUses,
			Steps: Checks(
				Check{Name: "the database is in no pod of the node", Do: databaseOutsidePods},
				Check{Name: "the database holds the role's users", Do: databaseHoldsUsers},
			),
		},
		{
			Name:   "one-opentofu-state",
			Spec:   []string{"SC-003"},
			Doc:    "the schema of the companion holds exactly one OpenTofu state, with the values of its objects",
			Skip:   needsPostgres,
			Seeded: seededByStandIn,
			Uses:   databaseUses,
			Steps:  Checks(Check{Name: "exactly one state in the schema", Do: oneOpenTofuState}),
		},
	},
}

// databaseUses: the role's URL is read in its pods; its host is judged
// against the namespace's pods and Services, and reached through a
// port-forward when a pod serves it (from outside the cluster only).
var databaseUses = []Capability{capExec, capDatabase, capForward}

// seededByStandIn marks the results of a role whose pods run a stand-in:
// the stand-in writes no data, so the rows the scenario reads were
// written by the environment, not by the role (docs/judgement-calls.md).
func seededByStandIn(inv *inventory.Inventory) string {
	if p := inv.Postgres; p != nil {
		if r := inv.Roles[p.Role]; r != nil && r.StandIn != "" {
			return fmt.Sprintf("the pods of role %s run %s in place of its service, which writes no rows: the rows read were seeded by the environment", p.Role, r.StandIn)
		}
	}
	return ""
}

// databaseHoldsUsers finds the contract's user in the role's users table,
// connected as the role is: with the URL and credential of its pod.
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

func needsPostgres(w world.World) string {
	inv := w.Inventory()
	if inv.Postgres == nil {
		return "the inventory has no postgres"
	}
	if _, why := databaseSecret(inv); why != "" {
		return why
	}
	for _, p := range inv.Roles[inv.Postgres.Role].Pods {
		if why := w.Lacks(p, world.NeedsStatusAndSecrets); why != "" {
			return why
		}
	}
	return ""
}

// needsUsersTable says why the role's data cannot be looked for: a
// database that only answers proves nothing of where the role keeps it.
func needsUsersTable(w world.World) string {
	inv := w.Inventory()
	switch {
	case inv.Postgres == nil:
		return "the inventory has no postgres"
	case inv.Postgres.UsersTable == "":
		return "the inventory names no table of the role's data (postgres.usersTable): a connection alone proves nothing"
	case inv.LDAP == nil:
		return "the inventory has no ldap contract, whose user (ldap.user) the table of the role's data must hold"
	}
	return needsPostgres(w)
}

// postgresURL starts a Postgres connection URL.
var postgresURL = regexp.MustCompile(`postgres(ql)?://`)

// databaseSecret is the file of the role's secrets that holds its
// database URL: the inventory's postgres.urlSecret, or the role's one
// secret whose template holds a postgres:// URL. why says why there is
// none.
func databaseSecret(inv *inventory.Inventory) (file, why string) {
	p := inv.Postgres
	if p.URLSecret != "" {
		return p.URLSecret, ""
	}
	role := inv.Roles[p.Role]
	if role == nil {
		return "", fmt.Sprintf("postgres.role: %q is no role of the inventory", p.Role)
	}
	var found []string
	for _, f := range slices.Sorted(maps.Keys(role.Secrets)) {
		if t := role.Secrets[f].Template; t != nil && postgresURL.MatchString(*t) {
			found = append(found, f)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return "", fmt.Sprintf("no secret of role %s has a template with a postgres:// URL: name the secret the role reads its database URL from in postgres.urlSecret", p.Role)
	}
	return "", fmt.Sprintf("secrets %s of role %s each have a template with a postgres:// URL: name the one the role reads its data with in postgres.urlSecret", strings.Join(found, ", "), p.Role)
}

// envName is a variable's name, as an environment file sets it.
var envName = regexp.MustCompile(`^(export\s+)?[A-Za-z_][A-Za-z0-9_]*$`)

// roleURL reads the database URL that a pod of the role reads: the first
// postgres:// URL of its secret file, bare or as VAR=URL. Its errors never
// quote the file: it holds a password.
func roleURL(ctx context.Context, s *State, pod inventory.Endpoint, file string) (*url.URL, error) {
	data, err := readPodSecret(ctx, s, pod, file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", secretWhere(s, pod, file), err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if name, value, ok := strings.Cut(line, "="); ok && envName.MatchString(name) {
			line = strings.Trim(value, `"'`)
		}
		if !postgresURL.MatchString(line) || strings.Index(line, "postgres") != 0 {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || u.Host == "" {
			return nil, poll.Permanent(fmt.Errorf("%s holds a postgres URL with no host, or one that does not parse", secretWhere(s, pod, file)))
		}
		return u, nil
	}
	return nil, poll.Saw("%s holds no postgres:// URL", secretWhere(s, pod, file))
}

// urlPort is the port of a Postgres URL: its own, or Postgres' 5432.
func urlPort(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	return 5432
}

func databaseOutsidePods(ctx context.Context, s *State) error {
	role := s.Inv.Postgres.Role
	// With no pod to compare, the database could be in any of them.
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return err
	}
	file, why := databaseSecret(s.Inv)
	if why != "" {
		return poll.Permanent(errors.New(why))
	}
	read := map[string][]string{}
	for _, pod := range pods {
		u, err := roleURL(ctx, s, pod, file)
		if err != nil {
			return err
		}
		db := databaseOf(u)
		read[db] = append(read[db], pod.Name)
		place, err := locateDatabase(ctx, s, pod, role, u)
		if err != nil {
			return err
		}
		if place.Pod != "" {
			return poll.Permanent(fmt.Errorf("pod %s reads its database (secret %s) at %s, in pod %s of role %s (%s): its data would go with the pod", pod.Name, file, u.Host, place.Pod, place.Role, place.Where))
		}
		s.Note("pod %s of role %s reads its database (secret %s) at %s: %s", pod.Name, role, file, u.Host, place.Where)
	}
	if split := splitDatabases(read); split != "" {
		return poll.Permanent(fmt.Errorf("the pods of role %s read different databases (secret %s): %s; the role's data would be split between them", role, file, split))
	}
	return nil
}

// databaseOf names the database a URL leads to, without its credential
// (each pod may log in as a user of its own): its host and port, and the
// database's name.
func databaseOf(u *url.URL) string {
	return net.JoinHostPort(u.Hostname(), strconv.Itoa(urlPort(u))) + u.Path
}

// splitDatabases says which pods read which database, when they do not
// all read one: the database of every replica of a role is the same, or
// some of its data is where the others never look.
func splitDatabases(read map[string][]string) string {
	if len(read) < 2 {
		return ""
	}
	var out []string
	for _, db := range slices.Sorted(maps.Keys(read)) {
		out = append(out, fmt.Sprintf("pods %s read %s", strings.Join(read[db], ", "), db))
	}
	return strings.Join(out, "; ")
}

// withDatabase connects as the role does, with the URL of its first pod,
// and waits until check passes.
func withDatabase(ctx context.Context, s *State, expect string, check func(context.Context, *pgx.Conn) error) error {
	db, err := roleDatabase(s)
	if err != nil {
		return err
	}
	probe := poll.Probe{Endpoint: db.what, Expect: expect, Within: s.Patience}
	return poll.Eventually(ctx, probe, func(ctx context.Context) error {
		// Connected each time: a rotation gives the role a new credential.
		conn, done, err := db.connect(ctx, s, nil)
		if err != nil {
			return err
		}
		defer done()
		return check(ctx, conn)
	})
}

// roleDB is the database of the inventory's postgres.role, as its first
// pod reads it.
type roleDB struct {
	role, file string
	pod        inventory.Endpoint
	// what names it in probes.
	what string
}

func roleDatabase(s *State) (*roleDB, error) {
	if s.Inv.Postgres == nil {
		return nil, poll.Permanent(errors.New("the inventory has no postgres"))
	}
	role := s.Inv.Postgres.Role
	pods, err := podsOf(s.Inv, role)
	if err != nil {
		return nil, err
	}
	file, why := databaseSecret(s.Inv)
	if why != "" {
		return nil, poll.Permanent(errors.New(why))
	}
	return &roleDB{role: role, file: file, pod: pods[0], what: fmt.Sprintf("the database of pod %s (secret %s)", pods[0].Name, file)}, nil
}

// errConnect marks a connection that the database refused, or that did
// not reach it, from an error in finding it.
var errConnect = errors.New("connect")

// locateDatabase finds where the URL that pod (of role) reads leads, as
// the pod sees it (World.Locate), noting what the world saw on the way.
func locateDatabase(ctx context.Context, s *State, pod inventory.Endpoint, role string, u *url.URL) (*world.Place, error) {
	place, err := s.World.Locate(ctx, pod, role, u.Hostname(), urlPort(u))
	if err != nil {
		return nil, err
	}
	for _, n := range place.Notes {
		s.Note("%s", n)
	}
	return place, nil
}

// connect reads the pod's URL, finds and reaches its host, and connects
// with the URL's credential, or with the one user gives (a credential
// read elsewhere: user and password). done closes the connection, then
// the port-forward it went through.
func (db *roleDB) connect(ctx context.Context, s *State, user *url.Userinfo) (conn *pgx.Conn, done func(), err error) {
	u, err := roleURL(ctx, s, db.pod, db.file)
	if err != nil {
		return nil, nil, err
	}
	place, err := locateDatabase(ctx, s, db.pod, db.role, u)
	if err != nil {
		return nil, nil, err
	}
	addr, stop, err := place.Reach(ctx)
	if err != nil {
		return nil, nil, err
	}
	if user != nil {
		u.User = user
	}
	cfg, err := connectConfig(u, addr)
	if err != nil {
		stop()
		return nil, nil, poll.Permanent(fmt.Errorf("%s: %w", secretWhere(s, db.pod, db.file), err))
	}
	conn, err = pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w to %s as %s, through %s: %w", errConnect, u.Redacted(), u.User.Username(), addr, err)
	}
	return conn, func() { conn.Close(context.WithoutCancel(ctx)); stop() }, nil
}

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

// connectConfig is the role's URL, connected at addr (a port-forward, a
// Service's endpoint): its user, password, database and TLS settings
// stay, and TLS still verifies the URL's host.
func connectConfig(u *url.URL, addr string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, errors.New("the URL is no Postgres URL pgx reads")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	cfg.Host, cfg.Port = host, uint16(p)
	for _, fb := range cfg.Fallbacks {
		fb.Host, fb.Port = host, uint16(p)
	}
	return cfg, nil
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
