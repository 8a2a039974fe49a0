package scenarios

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// TestRoleURLAndWhere: the URL is read from the pod's secret file as the
// role reads it (bare or VAR=URL), and judged against every pod of the
// inventory, whatever its role; its errors never quote the file.
func TestRoleURLAndWhere(t *testing.T) {
	dir := t.TempDir()
	str := func(s string) *string { return &s }
	tmpl := "LLDAP_DATABASE_URL=postgres://{{ .Data.username }}:{{ .Data.password }}@postgres/lldap"
	pod := func(name, addr string) inventory.Endpoint {
		d := filepath.Join(dir, name)
		os.MkdirAll(d, 0o700)
		return inventory.Endpoint{Name: name, Address: addr, SecretsDir: d}
	}
	inv := &inventory.Inventory{
		Roles: map[string]*inventory.Role{
			"lldap":    {Pods: []inventory.Endpoint{pod("lldap-0", "127.0.1.1")}, Secrets: map[string]facts.Secret{"db.env": {Path: "database/creds/lldap", Template: &tmpl}, "jwt": {Path: "secret/data/jwt", Field: str("value")}}},
			"authelia": {Pods: []inventory.Endpoint{pod("authelia-0", "127.0.1.40")}},
		},
		Postgres: &inventory.Postgres{Role: "lldap"},
	}
	if file, why := databaseSecret(inv); file != "db.env" || why != "" {
		t.Fatalf("databaseSecret = %q, %q", file, why)
	}
	s := &State{World: world.Files(inv), Inv: inv}
	ctx := context.Background()
	lldap := inv.Roles["lldap"].Pods[0]
	for content, want := range map[string]string{
		"LLDAP_DATABASE_URL=postgres://u:hunter2@127.0.1.20:5433/lldap\n": "127.0.1.20:5433, none of the inventory's pods",
		"postgresql://u:hunter2@localhost/lldap":                          "in pod lldap-0 of role lldap",
		"export DB='postgres://u:hunter2@127.0.1.40:5432/lldap'\n":        "in pod authelia-0 of role authelia",
		"DB=mysql://u:hunter2@127.0.1.40/lldap\n":                         "holds no postgres:// URL",
		"DB=postgres://u:hunter2@/lldap\n":                                "a postgres URL with no host",
	} {
		os.WriteFile(filepath.Join(lldap.SecretsDir, "db.env"), []byte(content), 0o600)
		got := ""
		u, err := roleURL(ctx, s, lldap, "db.env")
		if err == nil {
			var place *world.Place
			place, err = locateDatabase(ctx, s, lldap, "lldap", u)
			if err == nil && place.Pod != "" {
				got = "in pod " + place.Pod + " of role " + place.Role
			} else if err == nil {
				got = place.Where
			}
		}
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) || strings.Contains(got, "hunter2") {
			t.Errorf("%q: got %q, want %q", content, got, want)
		}
	}
	// Two URLs, or none, need the inventory's word.
	inv.Roles["lldap"].Secrets["other.env"] = facts.Secret{Path: "database/creds/other", Template: &tmpl}
	if _, why := databaseSecret(inv); !strings.Contains(why, "secrets db.env, other.env of role lldap each have") {
		t.Errorf("two URLs: %q", why)
	}
	inv.Postgres.URLSecret = "other.env"
	if file, why := databaseSecret(inv); file != "other.env" || why != "" {
		t.Errorf("urlSecret: %q, %q", file, why)
	}
}

// TestSeededMarksStandIns: the postgres results of a role whose pods run
// a stand-in are marked, in the report's line, as reading rows that the
// environment wrote; a role that runs its own service is not marked.
func TestSeededMarksStandIns(t *testing.T) {
	inv := &inventory.Inventory{Roles: map[string]*inventory.Role{"lldap": {StandIn: inventory.StandInSlapd}}, Postgres: &inventory.Postgres{Role: "lldap"}}
	res := &Result{Suite: "postgres", Scenario: "data-outside-pod", Status: Passed, Seeded: seededByStandIn(inv)}
	if line := res.Line(); !strings.Contains(line, "(seeded: the pods of role lldap run slapd in place of its service") {
		t.Errorf("a stand-in's result: %q", line)
	}
	inv.Roles["lldap"].StandIn = ""
	if why := seededByStandIn(inv); why != "" {
		t.Errorf("lldap's own service marked: %q", why)
	}
}

// The replicas of a role read one database: pods that read another (a
// stale secret, another host or database name) are named with it; the
// credential, which may be each pod's own, does not count.
func TestSplitDatabases(t *testing.T) {
	read := map[string][]string{}
	for pod, raw := range map[string]string{
		"lldap-a": "postgres://v-lldap-a:x@postgres.directory.svc/lldap",
		"lldap-b": "postgresql://v-lldap-b:y@postgres.directory.svc:5432/lldap",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		read[databaseOf(u)] = append(read[databaseOf(u)], pod)
	}
	if got := splitDatabases(read); got != "" {
		t.Errorf("one database by two users: %s", got)
	}
	u, _ := url.Parse("postgres://v-lldap-c:z@old-postgres.directory.svc/lldap")
	read[databaseOf(u)] = append(read[databaseOf(u)], "lldap-c")
	for _, want := range []string{"pods lldap-c read old-postgres.directory.svc:5432/lldap", "read postgres.directory.svc:5432/lldap"} {
		if got := splitDatabases(read); !strings.Contains(got, want) {
			t.Errorf("got %q, want %q in it", got, want)
		}
	}
}
