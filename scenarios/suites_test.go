package scenarios_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/inventory"
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
	inv, err := inventory.Load(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
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
	if len(results) != 19 {
		t.Errorf("ran %d scenarios, want 19", len(results))
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

// TestSuitesFailWhenBroken breaks the environment on purpose, one way at a
// time, and checks that the right scenario fails and names the cause.
func TestSuitesFailWhenBroken(t *testing.T) {
	cases := []struct {
		name     string
		opts     localenv.Options
		breakIt  func(t *testing.T, env *localenv.Env)
		scenario string
		reason   string
	}{
		{
			name: "wrong CA in the contract",
			breakIt: func(t *testing.T, env *localenv.Env) {
				other, _ := pki.NewCA("another CA")
				inv, _ := inventory.Load(env.Inventory)
				os.WriteFile(inv.LDAP.CAFile, other.PEM, 0o644)
			},
			scenario: "ldap/service-ldaps-bind", reason: "certificate signed by unknown authority",
		},
		{
			name:     "certificate for another name",
			opts:     localenv.Options{CertNames: []string{"other.example.org"}},
			scenario: "ldap/service-ldaps-bind", reason: "certificate is valid for other.example.org, not directory-lldap.directory.svc.cluster.local",
		},
		{
			name:     "a replica stopped",
			breakIt:  func(t *testing.T, env *localenv.Env) { env.Stop("slapd-1") },
			scenario: "ldap/each-pod-binds", reason: "pod directory-lldap-1: at ldaps://",
		},
		{
			name: "bind password changed",
			breakIt: func(t *testing.T, env *localenv.Env) {
				if err := env.ChangePassword(context.Background(), "authelia-bind", "a-new-password"); err != nil {
					t.Fatal(err)
				}
			},
			scenario: "ldap/service-ldaps-bind", reason: "the bind with the password of",
		},
		{
			name:     "plain port on the Service",
			opts:     localenv.Options{PlainPortOnService: true},
			scenario: "ldap/plain-port-not-on-service", reason: "has the plain LDAP port 3890",
		},
		{
			name: "a second OpenTofu state",
			breakIt: func(t *testing.T, env *localenv.Env) {
				ctx := context.Background()
				db, err := pgx.Connect(ctx, env.PostgresDSN())
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close(ctx)
				if _, err := db.Exec(ctx, `INSERT INTO lldap_provision.states (name, data) VALUES ('stray', '{}')`); err != nil {
					t.Fatal(err)
				}
			},
			scenario: "postgres/one-opentofu-state", reason: "saw 2 states (default, stray)",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := vmtest.NewEnv(t, c.opts)
			if c.breakIt != nil {
				c.breakIt(t, env)
			}
			suite, _, _ := strings.Cut(c.scenario, "/")
			results := run(t, env, 3*time.Second, suite)
			r := results[c.scenario]
			if r == nil || r.Status != scenarios.Failed || !strings.Contains(r.Reason, c.reason) {
				t.Fatalf("%s should fail with %q; got %+v", c.scenario, c.reason, r)
			}
			t.Logf("%s", r.Line())
		})
	}
}

// TestSecretsFailWhenBroken stops the sidecar of one pod and changes what
// it wrote, as a sidecar that died or rendered wrongly would leave it.
func TestSecretsFailWhenBroken(t *testing.T) {
	other, _ := pki.NewCA("another CA")
	otherCert, otherKey, _ := other.Issue("directory-lldap.directory.svc.cluster.local")
	cases := []struct {
		name, file, content, reason string
	}{
		{"stale base64 field", "jwt", "an old value", "pod directory-lldap-1, secret jwt: at "},
		{"variable with its line end", "admin-password", "", "bytes that are not field env of secret/data/lldap/env, variable LLDAP_LDAP_USER_PASS with no line end"},
		{"template over the wrong credential", "db.env", "", "a credential that does not log in to Postgres"},
		{"certificate of another CA", "tls.pem", string(otherCert) + string(otherKey), "that the PKI's CA does not verify"},
	}
	// A credential split over two files: a wrong password beside the
	// username does not log in.
	t.Run("password file of a split credential", func(t *testing.T) {
		t.Parallel()
		env := vmtest.NewEnv(t, localenv.Options{})
		requireOpenBao(t, env)
		if err := env.Stop("sidecar-directory-authelia-0"); err != nil {
			t.Fatal(err)
		}
		inv, _ := inventory.Load(env.Inventory)
		os.WriteFile(inv.Roles["authelia"].Pods[0].SecretsDir+"/db-password", []byte("not-the-password"), 0o600)
		r := run(t, env, 2*time.Second, "secrets")["secrets/files-hold-their-values"]
		if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "pod directory-authelia-0, secret db-password") || !strings.Contains(r.Reason, "does not log in") {
			t.Fatalf("got %s: %s", r.Status, r.Reason)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := vmtest.NewEnv(t, localenv.Options{})
			requireOpenBao(t, env)
			if err := env.Stop("sidecar-directory-lldap-1"); err != nil {
				t.Fatal(err)
			}
			inv, _ := inventory.Load(env.Inventory)
			path := inv.Roles["lldap"].Pods[1].SecretsDir + "/" + c.file
			content := c.content
			if content == "" {
				old, _ := os.ReadFile(path)
				switch c.file {
				case "admin-password":
					content = string(old) + "\n"
				case "db.env":
					content = strings.Replace(string(old), "@", "x@", 1)
				}
			}
			os.WriteFile(path, []byte(content), 0o600)
			r := run(t, env, 2*time.Second, "secrets")["secrets/files-hold-their-values"]
			if r.Status != scenarios.Failed || !strings.Contains(r.Reason, c.reason) || !strings.Contains(r.Reason, "pod directory-lldap-1") || strings.Contains(r.Reason, "pod directory-lldap-0") {
				t.Fatalf("want a failure naming pod directory-lldap-1 and %q; got %s: %s", c.reason, r.Status, r.Reason)
			}
		})
	}
}

func TestPortalFailsWhenNginxTrustsAnotherCA(t *testing.T) {
	t.Parallel()
	env := vmtest.NewEnv(t, localenv.Options{PortalTrustsOtherCA: true})
	requireOpenBao(t, env)
	r := run(t, env, 2*time.Second, "authelia")["authelia/portal-login"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "saw HTTP 502") || !strings.Contains(r.Reason, "could not reach authelia") {
		t.Fatalf("got %s: %s", r.Status, r.Reason)
	}
}

// TestRotationFailsWithoutRestart runs the pods without watching their
// secrets with restart: a new value, and a revoked credential, then
// restart nothing, and the rotation suite says so.
func TestRotationFailsWithoutRestart(t *testing.T) {
	t.Parallel()
	env := vmtest.NewEnv(t, localenv.Options{NoRestart: true})
	requireOpenBao(t, env)
	results := runMatching(t, env, 3*time.Second, regexp.MustCompile(`restart-secret-restarts|lldap-replicas`), "rotation")
	for id, want := range map[string]string{
		"rotation/restart-secret-restarts":                "expected pod directory-lldap-0 to restart its service in the same pod; saw restart count 0 still",
		"rotation/new-credential-restarts-lldap-replicas": "to restart its service with a new credential within the TTL 20s; saw restart count 0",
	} {
		if r := results[id]; r.Status != scenarios.Failed || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: want a failure with %q; got %s: %s", id, want, r.Status, r.Reason)
		}
	}
}

func TestIdentityReadableFails(t *testing.T) {
	t.Parallel()
	env := vmtest.NewEnv(t, localenv.Options{})
	requireOpenBao(t, env)
	inv, _ := inventory.Load(env.Inventory)
	token := inv.Roles["authelia"].Pods[0].RootDir + "/var/run/secrets/kubernetes.io/serviceaccount/token"
	os.MkdirAll(filepath.Dir(token), 0o755)
	os.WriteFile(token, []byte("eyJ..."), 0o640)
	r := run(t, env, time.Second, "secrets")["secrets/identity-not-readable"]
	if r.Status != scenarios.Failed || !strings.Contains(r.Reason, "pod directory-authelia-0: "+token+" is readable by others") && !strings.Contains(r.Reason, "belongs to the service's own user") {
		t.Fatalf("got %s: %s", r.Status, r.Reason)
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
