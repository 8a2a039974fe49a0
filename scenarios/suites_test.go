package scenarios_test

import (
	"encoding/base64"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// run runs suites against env's inventory and returns the results by
// "suite/scenario".
func run(t *testing.T, env *localenv.Env, patience time.Duration, suites ...string) map[string]*scenarios.Result {
	t.Helper()
	return runMatching(t, env, patience, nil, suites...)
}

// runMatching runs the scenarios of suites that match re (all when nil).
func runMatching(t *testing.T, env *localenv.Env, patience time.Duration, re *regexp.Regexp, suites ...string) map[string]*scenarios.Result {
	t.Helper()
	return runWith(t, env, scenarios.Options{Patience: patience, Run: re, Disruptive: true}, suites...)
}

// runWith runs suites against env's inventory with opts, each scenario
// bounded by the command's default timeout and its windows.
func runWith(t *testing.T, env *localenv.Env, opts scenarios.Options, suites ...string) map[string]*scenarios.Result {
	t.Helper()
	inv := loadInventory(t, env)
	selected, err := scenarios.Select(suites)
	if err != nil {
		t.Fatal(err)
	}
	// Each scenario has a deadline of its own (the timeout and its
	// windows); a deadline for the whole run would cut the exclusive
	// scenarios, which run last, on a loaded machine.
	out := map[string]*scenarios.Result{}
	opts.Parallel, opts.Timeout = scenarios.DefaultParallel, scenarios.DefaultTimeout
	for _, r := range scenarios.Run(t.Context(), world.Files(inv), selected, opts) {
		out[r.ID()] = r
	}
	return out
}

// requireOpenBao fails a test that needs OpenBao where make servers built
// it, and skips it where no one did (a bare go test on a laptop).
func requireOpenBao(t *testing.T, env *localenv.Env) {
	t.Helper()
	if env.Servers().OpenBaoURL() != "" {
		return
	}
	if os.Getenv(servers.DirEnv) != "" {
		t.Fatalf("%s is set but holds no vault: run make servers", servers.DirEnv)
	}
	t.Skipf("no vault built: run the tests with make test, which builds it")
}

func TestSuitesPassOnLocalEnvironment(t *testing.T) {
	t.Parallel()
	localSlot(t)
	env := testenv.NewEnv(t, localenv.Options{})
	plainRunChangesNothing(t, env)
	othersLease := anotherConsumersLease(t, env)
	results := run(t, env, 0, "ldap", "postgres", "lldap-http", "secrets", "authelia", "rotation")
	if othersLease != nil {
		othersLease()
	}
	probeAnswersAsTheReader(t, env)
	for id, r := range results {
		switch {
		case strings.HasPrefix(id, "lldap-http/"):
			if r.Status != scenarios.Skipped || !strings.Contains(r.Reason, "run slapd standing in for lldap") {
				t.Errorf("%s: %s %s", id, r.Status, r.Reason)
			}
		case readerPasswordScenarios[id]:
			// The local lldap role has no bind-password secret (the real
			// node's has, and runs it).
			if r.Status != scenarios.Skipped || !strings.Contains(r.Reason, "has no secret bind-password") {
				t.Errorf("%s: %s %s", id, r.Status, r.Reason)
			}
		case id == "ldap/roles-published":
			// The local environment's node has no such unit: the real
			// node's main pod runs its stand-in, and is judged there.
			if r.Status != scenarios.Skipped || !strings.Contains(r.Reason, "has no unit lldap-publish-roles") {
				t.Errorf("%s: %s %s", id, r.Status, r.Reason)
			}
		case (strings.HasPrefix(id, "secrets/") || strings.HasPrefix(id, "authelia/") || strings.HasPrefix(id, "rotation/") || strings.HasPrefix(id, "postgres/")) && env.Servers().OpenBaoURL() == "":
			if r.Status != scenarios.Skipped {
				t.Errorf("%s without OpenBao: %s %s", id, r.Status, r.Reason)
			}
		case r.Status != scenarios.Passed:
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
	// slapd stands in for lldap here: the rows the postgres suite read are
	// the environment's, and the report says so.
	for _, id := range []string{"postgres/data-outside-pod", "postgres/one-opentofu-state"} {
		if r := results[id]; r != nil && r.Status == scenarios.Passed && !strings.Contains(r.Seeded, "slapd") {
			t.Errorf("%s is not marked seeded: %q", id, r.Seeded)
		}
	}
	if len(results) != 25 {
		t.Errorf("ran %d scenarios, want 25", len(results))
	}
	for _, id := range []string{"rotation/new-credential-restarts-authelia", "rotation/new-credential-restarts-lldap-replicas"} {
		if r := results[id]; r != nil && r.Status == scenarios.Passed {
			t.Logf("%s: %s", id, strings.Join(r.Steps[2].Notes, "; "))
		}
	}
	// Runs repeat: a wrong password tried at each run locks no one out
	// (Authelia bans a user after 3 failures in 2 minutes).
	if env.Servers().OpenBaoURL() != "" {
		for run := 2; run <= 4; run++ {
			for id, r := range runWith(t, env, scenarios.Options{Run: regexp.MustCompile("^authelia/")}, "authelia") {
				if r.Status != scenarios.Passed {
					t.Errorf("run %d: %s: %s: %s", run, id, r.Status, r.Reason)
				}
			}
		}
	}
	notes := strings.Join(results["ldap/wrong-ca-refused"].Steps[0].Notes, " ")
	if !strings.Contains(notes, "refused as it must be") || !strings.Contains(notes, "unknown authority") {
		t.Errorf("the wrong CA scenario does not say why it passed: %q", notes)
	}
}

// TestSuitesSameOnBothProviders runs every suite on an environment of
// processes and on one of containers: the same results, every scenario
// passing but those of lldap's HTTP API and of a cluster; then a
// replica's container goes away and the bind at that pod fails, named.
func TestSuitesSameOnBothProviders(t *testing.T) {
	testenv.Engine(t)
	t.Parallel()
	localSlot(t)
	processes := testenv.NewEnv(t, localenv.Options{})
	containers := testenv.NewEnv(t, localenv.Options{Provider: localenv.ProviderContainers})
	requireOpenBao(t, processes)
	onProcesses := run(t, processes, 30*time.Second)
	onContainers := run(t, containers, 30*time.Second)
	for id, r := range onProcesses {
		c := onContainers[id]
		if c == nil || c.Status != r.Status {
			t.Errorf("%s: %s on processes, %v on containers", id, r.Status, c)
		}
		// Only lldap's HTTP API is not here, no cluster, and no unit
		// lldap-publish-roles in the local node.
		if skip := strings.HasPrefix(id, "lldap-http/") || strings.HasPrefix(id, "deployments/") || strings.HasPrefix(id, "units/") || readerPasswordScenarios[id] || id == "ldap/roles-published"; skip == (r.Status == scenarios.Passed) {
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
	if err := containers.Servers().Stop("slapd-1"); err != nil {
		t.Fatal(err)
	}
	r := runMatching(t, containers, 2*time.Second, regexp.MustCompile("each-pod-binds"), "ldap")["ldap/each-pod-binds"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "pod directory-lldap-1: ") || strings.Contains(r.Reason, "pod directory-lldap-0") {
		t.Errorf("a replica's container removed: %s: %s", r.Status, r.Reason)
	}
}

// plainRunChangesNothing: a run without Disruptive skips every scenario
// that changes the deployment, saying why, and OpenBao's audit log shows
// no write of a secret and no revocation made during it.
func plainRunChangesNothing(t *testing.T, env *localenv.Env) {
	t.Helper()
	if env.Servers().OpenBaoURL() == "" {
		return
	}
	before, err := env.Servers().OpenBaoChanges()
	if err != nil {
		t.Fatal(err)
	}
	disruptive := 0
	for id, r := range runWith(t, env, scenarios.Options{}) {
		if r.Disruptive {
			disruptive++
			if r.Status != scenarios.Skipped || r.Reason != scenarios.NotAskedToDisrupt {
				t.Errorf("%s ran without --disruptive: %s %s", id, r.Status, r.Reason)
			}
		}
	}
	if disruptive == 0 {
		t.Error("no scenario is marked disruptive")
	}
	after, err := env.Servers().OpenBaoChanges()
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("a run without --disruptive changed secrets in OpenBao: %q", after[len(before):])
	}
}

// anotherConsumersLease takes a credential of lldap's database role as a
// consumer outside the pods would. What it returns fails the test if the
// lease was revoked since: the rotation revokes only the pods' leases.
func anotherConsumersLease(t *testing.T, env *localenv.Env) func() {
	t.Helper()
	if env.Servers().OpenBaoURL() == "" {
		return nil
	}
	inv := loadInventory(t, env)
	token, err := inventory.ReadSecret(inv.OpenBao.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	bao := openbao.New(inv.OpenBao.Address, token)
	path := inv.Facts.PodRoles.Roles["lldap"].Secrets["db.env"].Path
	var creds struct {
		LeaseID string `json:"lease_id"`
	}
	if err := bao.Do(t.Context(), http.MethodGet, path, nil, &creds); err != nil || creds.LeaseID == "" {
		t.Fatalf("another consumer's credential of %s: %v", path, err)
	}
	// Kept beyond the role's short TTL, for 10 minutes.
	issued := time.Now()
	if err := bao.Do(t.Context(), http.MethodPut, "sys/leases/renew", map[string]any{"lease_id": creds.LeaseID, "increment": 600}, nil); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if time.Since(issued) > 9*time.Minute {
			t.Logf("lease %s not checked: its 10 minutes are over", creds.LeaseID)
			return
		}
		if err := bao.Do(t.Context(), http.MethodPut, "sys/leases/lookup", map[string]string{"lease_id": creds.LeaseID}, nil); err != nil {
			t.Errorf("the rotation revoked lease %s, which no pod holds: %v", creds.LeaseID, err)
		}
	}
}

// probeAnswersAsTheReader asks the probe that service-ldaps-bind adds to
// a cluster's main pod, run here on pipes, for the contract's bind at the
// environment's real slapd: it finds the user, and it refuses a wrong
// password and a CA that did not sign the role's certificate.
func probeAnswersAsTheReader(t *testing.T, env *localenv.Env) {
	t.Helper()
	inv := loadInventory(t, env)
	other, err := pki.NewCA("a CA that signed nothing of the role's")
	if err != nil {
		t.Fatal(err)
	}
	otherCA := base64.StdEncoding.EncodeToString(other.PEM)
	for _, c := range []struct {
		name    string
		change  func(q map[string]any)
		want    string
		refused string
	}{
		{name: "as the contract says", want: "bound as " + inv.LDAP.BindDN},
		{name: "a wrong password", change: func(q map[string]any) { q["password"] = "not-the-password" }, refused: "was refused"},
		{name: "another CA", change: func(q map[string]any) { q["ca"] = otherCA }, refused: "certificate signed by unknown authority"},
	} {
		found, answer, err := scenarios.AskProbe(t.Context(), inv, c.change)
		switch {
		case err != nil:
			t.Errorf("the probe, %s: %v", c.name, err)
		case c.refused == "" && (answer != nil || !strings.Contains(found, c.want)):
			t.Errorf("the probe, %s: found %q, error %v; want %q", c.name, found, answer, c.want)
		case c.refused != "" && (answer == nil || !strings.Contains(answer.Error(), c.refused)):
			t.Errorf("the probe, %s: found %q, error %v; want it refused: %q", c.name, found, answer, c.refused)
		}
	}
}

// readerPasswordScenarios run only where the lldap role has a
// bind-password secret: on the real node, not in the local environment.
var readerPasswordScenarios = map[string]bool{"ldap/reader-password-from-kv": true, "rotation/reader-password-follows-rotation": true}
