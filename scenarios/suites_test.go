package scenarios_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/vmtests/localenv"
	"github.com/fediversity/podroles/vmtests/servers"
	"github.com/fediversity/podroles/vmtests/vmtest"
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
	inv := loadInventory(t, env)
	selected, err := scenarios.Select(suites)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := map[string]*scenarios.Result{}
	for _, r := range scenarios.Run(ctx, inv, selected, scenarios.Options{Parallel: 4, Timeout: time.Minute, Patience: patience, Run: re}) {
		out[r.ID()] = r
	}
	return out
}

// requireOpenBao fails a test that needs OpenBao where make servers built
// it, and skips it where no one did (a bare go test on a laptop).
func requireOpenBao(t *testing.T, env *localenv.Env) {
	t.Helper()
	if env.OpenBaoURL() != "" {
		return
	}
	if os.Getenv(servers.DirEnv) != "" {
		t.Fatalf("%s is set but holds no vault: run make servers", servers.DirEnv)
	}
	t.Skipf("no vault built: run the tests with make test, which builds it")
}

func TestSuitesPassOnLocalEnvironment(t *testing.T) {
	t.Parallel()
	env := vmtest.NewEnv(t, localenv.Options{})
	results := run(t, env, 0, "ldap", "postgres", "lldap-http", "secrets", "authelia", "rotation")
	for id, r := range results {
		switch {
		case strings.HasPrefix(id, "lldap-http/"):
			if r.Status != scenarios.Skipped || !strings.Contains(r.Reason, `runs "slapd", not lldap`) {
				t.Errorf("%s: %s %s", id, r.Status, r.Reason)
			}
		case (strings.HasPrefix(id, "secrets/") || strings.HasPrefix(id, "authelia/") || strings.HasPrefix(id, "rotation/")) && env.OpenBaoURL() == "":
			if r.Status != scenarios.Skipped {
				t.Errorf("%s without OpenBao: %s %s", id, r.Status, r.Reason)
			}
		case r.Status != scenarios.Passed:
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
	if len(results) != 22 {
		t.Errorf("ran %d scenarios, want 22", len(results))
	}
	for _, id := range []string{"rotation/new-credential-restarts-authelia", "rotation/new-credential-restarts-lldap-replicas"} {
		if r := results[id]; r != nil && r.Status == scenarios.Passed {
			t.Logf("%s: %s", id, strings.Join(r.Steps[2].Notes, "; "))
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
	vmtest.Engine(t)
	t.Parallel()
	processes := vmtest.NewEnv(t, localenv.Options{})
	containers := vmtest.NewEnv(t, localenv.Options{Provider: localenv.ProviderContainers})
	requireOpenBao(t, processes)
	onProcesses := run(t, processes, 30*time.Second)
	onContainers := run(t, containers, 30*time.Second)
	for id, r := range onProcesses {
		c := onContainers[id]
		if c == nil || c.Status != r.Status {
			t.Errorf("%s: %s on processes, %v on containers", id, r.Status, c)
		}
		// Only lldap's HTTP API is not here, and no cluster.
		if skip := strings.HasPrefix(id, "lldap-http/") || strings.HasPrefix(id, "deployments/") || strings.HasPrefix(id, "units/"); skip == (r.Status == scenarios.Passed) {
			t.Errorf("%s: %s: %s", id, r.Status, r.Reason)
		}
	}
	if err := containers.Stop("slapd-1"); err != nil {
		t.Fatal(err)
	}
	r := runMatching(t, containers, 2*time.Second, regexp.MustCompile("each-pod-binds"), "ldap")["ldap/each-pod-binds"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "pod directory-lldap-1: ") || strings.Contains(r.Reason, "pod directory-lldap-0") {
		t.Errorf("a replica's container removed: %s: %s", r.Status, r.Reason)
	}
}
