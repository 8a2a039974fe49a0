package scenarios_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/inventory"
	"github.com/fediversity/podroles/vmtests/localenv"
	"github.com/fediversity/podroles/vmtests/vmtest"
)

// A scenario that no break has ever failed may pass by construction. So
// every registered scenario has at least one breaking case: a test that
// breaks, in a real environment, what the scenario guards (a server's
// setting through the local environment's options, or a real action on a
// real server or pod), and sees that scenario fail with a message naming
// the cause, while the scenarios run beside it do not fail. The breaks
// never touch what the runner is given (its inventory, its node): the
// world changes, and the runner must see it.

// where a breaking case breaks.
type where string

const (
	// onLocal: a local environment of its own (vmtests/localenv).
	onLocal where = "local environment"
	// onCluster: the directory example's real pods on the machine's real
	// node, broken and mended (see cluster_test.go).
	onCluster where = "real pods"
)

// breakingCase is one break of what a scenario guards.
type breakingCase struct {
	// name says what is broken.
	name  string
	where where
	// opts start the local environment broken; breakLocal breaks it
	// once it runs.
	opts       localenv.Options
	breakLocal func(t *testing.T, env *localenv.Env)
	// breakCluster breaks the real pods of world (the directory
	// example's when empty), and returns what mends them.
	breakCluster func(t *testing.T, ctx context.Context, w *realWorld) (mend func())
	world        string
	// run selects the scenarios run with it (a regular expression over
	// "suite/scenario"); its suite when empty.
	run string
	// reasons are what the failure must name.
	reasons []string
	// alsoFails are the scenarios run with it that the same break
	// rightly fails too, with why.
	alsoFails map[string]string
	// needs says what the case needs that make test does not give, if
	// anything: then it is skipped where that is missing.
	needs string
}

// breakingCases are the breaking cases by the ID of the scenario each
// breaks, those of a local environment and those of the real pods.
// TestEveryScenarioHasABreakingCase holds the registry to it.
var breakingCases = joinCases(localCases, clusterCases())

// joinCases joins tables of cases.
func joinCases(tables ...map[string][]breakingCase) map[string][]breakingCase {
	out := map[string][]breakingCase{}
	for _, table := range tables {
		for id, cases := range table {
			out[id] = append(out[id], cases...)
		}
	}
	return out
}

// localCases are the cases of a local environment.
var localCases = map[string][]breakingCase{
	"ldap/service-ldaps-bind": {
		{
			name: "another CA in the contract's CA file", where: onLocal,
			breakLocal: func(t *testing.T, env *localenv.Env) {
				other, _ := pki.NewCA("another CA")
				writeNodeFile(t, env, env.LDAPCAFile(), other.PEM)
			},
			reasons:   []string{"certificate signed by unknown authority"},
			alsoFails: map[string]string{"ldap/each-pod-binds": "the pods' certificates are the Service's"},
		},
		{
			name: "a certificate for another name", where: onLocal,
			opts:    localenv.Options{CertNames: []string{"other.example.org"}},
			reasons: []string{"certificate is valid for other.example.org, not directory-lldap.directory.svc.cluster.local"},
			alsoFails: map[string]string{
				"ldap/each-pod-binds":   "the pods' certificates are the Service's",
				"ldap/wrong-ca-refused": "a name is checked before the CA: refused for the name, not the CA",
			},
		},
		{
			name: "the reader's password changed in the directory, not in the contract's file", where: onLocal,
			breakLocal: func(t *testing.T, env *localenv.Env) {
				if err := env.ChangePassword(context.Background(), "authelia-bind", "a-new-password"); err != nil {
					t.Fatal(err)
				}
			},
			reasons:   []string{"the bind with the password of the contract's /var/lib/lldap-reader/bind-password was refused"},
			alsoFails: map[string]string{"ldap/each-pod-binds": "each pod refuses it too"},
		},
	},
	"ldap/plain-port-not-on-service": {{
		name: "the plain LDAP port on the Service", where: onLocal,
		opts:    localenv.Options{PlainPortOnService: true},
		reasons: []string{"has the plain LDAP port 3890"},
	}},
	"ldap/each-pod-binds": {{
		name: "a replica's server stopped", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) { stop(t, env, "slapd-1") },
		reasons:    []string{"pod directory-lldap-1: at ldaps://"},
	}},
	"ldap/wrong-ca-refused": {{
		name: "an expired certificate on the Service: refused, but not for an unknown CA", where: onLocal,
		opts:    localenv.Options{ExpiredCertificate: true},
		reasons: []string{"refused, but not for the expected reason", "certificate has expired"},
		alsoFails: map[string]string{
			"ldap/service-ldaps-bind": "the certificate has expired",
			"ldap/each-pod-binds":     "the certificate has expired",
			"ldap/wrong-name-refused": "refused for the date before the name",
		},
	}},
	"ldap/wrong-name-refused": {{
		name: "a certificate valid for any name under .invalid", where: onLocal,
		opts:    localenv.Options{CertNames: []string{"directory-lldap.directory.svc.cluster.local", "*.invalid"}},
		reasons: []string{"the handshake succeeded"},
	}},

	// lldap's HTTP API needs lldap's image, which this project's
	// machines cannot get: these run where PODROLES_IMAGE_LLDAP names
	// one.
	"lldap-http/login-through-service": {{
		name: "the admin's password changed in lldap, not in its file", where: onLocal, needs: "lldap",
		opts: lldapOptions(),
		breakLocal: func(t *testing.T, env *localenv.Env) {
			if err := env.ChangePassword(context.Background(), "admin", "a-new-password"); err != nil {
				t.Fatal(err)
			}
		},
		reasons:   []string{"expected a login of admin with a token"},
		alsoFails: map[string]string{"lldap-http/login-at-each-pod": "each pod refuses it", "lldap-http/token-accepted-by-other-replica": "no login, no token"},
	}},
	"lldap-http/login-at-each-pod": {{
		name: "a replica stopped", where: onLocal, needs: "lldap",
		opts:       lldapOptions(),
		breakLocal: func(t *testing.T, env *localenv.Env) { stop(t, env, "lldap-1") },
		reasons:    []string{"pod directory-lldap-1: "},
		alsoFails:  map[string]string{"lldap-http/token-accepted-by-other-replica": "the other replica is gone"},
	}},
	"lldap-http/token-accepted-by-other-replica": {{
		name: "the second replica stopped", where: onLocal, needs: "lldap",
		opts:       lldapOptions(),
		breakLocal: func(t *testing.T, env *localenv.Env) { stop(t, env, "lldap-1") },
		reasons:    []string{"the second pod accepts the token"},
		alsoFails:  map[string]string{"lldap-http/login-at-each-pod": "the replica is gone"},
	}},

	"postgres/data-outside-pod": {{
		name: "PostgreSQL at the address of the role's first pod", where: onLocal,
		opts:    localenv.Options{PostgresInPod: true},
		reasons: []string{"in pod directory-lldap-0 of role lldap: its data would go with the pod"},
	}},
	"postgres/one-opentofu-state": {{
		name: "a second OpenTofu state", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
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
		reasons: []string{"saw 2 states (default, stray)"},
	}},

	"secrets/files-hold-their-values": {
		wrongSecretFile("a stale base64 field", "lldap", 1, "jwt", func([]byte) string { return "an old value" }, "pod directory-lldap-1, secret jwt: at "),
		wrongSecretFile("a variable with its line end", "lldap", 1, "admin-password", func(old []byte) string { return string(old) + "\n" },
			"bytes that are not field env of secret/data/lldap/env, variable LLDAP_LDAP_USER_PASS with no line end"),
		wrongSecretFile("a template over a wrong credential", "lldap", 1, "db.env", func(old []byte) string { return strings.Replace(string(old), "@", "x@", 1) },
			"a credential that does not log in to Postgres"),
		wrongSecretFile("a certificate of another CA", "lldap", 1, "tls.pem", func([]byte) string {
			other, _ := pki.NewCA("another CA")
			cert, key, _ := other.Issue("directory-lldap.directory.svc.cluster.local")
			return string(cert) + string(key)
		}, "that the PKI's CA does not verify"),
		// One credential split over two files: a wrong password beside
		// the username does not log in.
		wrongSecretFile("the password file of a split credential", "authelia", 0, "db-password", func([]byte) string { return "not-the-password" },
			"pod directory-authelia-0, secret db-password", "does not log in"),
	},
	"secrets/service-started-after-secrets": {{
		name: "the worker's service started before its sidecar wrote its secrets", where: onLocal,
		opts:    localenv.Options{ServiceBeforeSecrets: true},
		reasons: []string{"pod directory-worker-0: its service started at", "before greeting existed"},
	}},
	"secrets/identity-not-readable": {{
		name: "a service-account token that others read in authelia's pod", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
			inv := loadInventory(t, env)
			token := filepath.Join(inv.Roles["authelia"].Pods[0].RootDir, "var/run/secrets/kubernetes.io/serviceaccount/token")
			os.MkdirAll(filepath.Dir(token), 0o755)
			if err := os.WriteFile(token, []byte("eyJ..."), 0o640); err != nil {
				t.Fatal(err)
			}
		},
		reasons: []string{"pod directory-authelia-0: ", "var/run/secrets/kubernetes.io/serviceaccount/token is readable by others"},
	}},

	"authelia/portal-login": {{
		name: "the portal's nginx trusts another CA than authelia's", where: onLocal,
		opts:      localenv.Options{PortalTrustsOtherCA: true},
		reasons:   []string{"saw HTTP 502", "could not reach authelia"},
		alsoFails: map[string]string{"authelia/wrong-password-refused": "the right password must log in first", "authelia/login-stored-in-postgres": "no login"},
	}},
	"authelia/wrong-password-refused": {{
		name: "the directory takes a wrong password of the admin too", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
			password, err := inventory.ReadSecret(filepath.Join(env.Dir, "secrets", "admin-password"))
			if err != nil {
				t.Fatal(err)
			}
			if err := env.AcceptPassword(context.Background(), "admin", password+"-wrong"); err != nil {
				t.Fatal(err)
			}
		},
		reasons: []string{"log in with a wrong password", "expected the wrong password to be refused with HTTP 401; saw HTTP 200"},
	}},
	"authelia/login-stored-in-postgres": {{
		name: "authelia reaches Postgres with a credential that never expires", where: onLocal,
		opts:    localenv.Options{AutheliaStaticCredential: true},
		reasons: []string{"authelia connected as authelia_static, a credential that does not expire"},
	}},

	"rotation/new-credential-restarts-authelia": {{
		name: "authelia's pod restarts nothing for its secrets", where: onLocal,
		opts:    localenv.Options{NoRestartOn: []string{"authelia"}},
		run:     "rotation/new-credential-restarts-authelia",
		reasons: []string{"expected pod directory-authelia-0 (uid", "to restart its service with a new credential within the TTL 20s; saw restart count 0"},
	}},
	"rotation/new-credential-restarts-lldap-replicas": {{
		name: "lldap's pods restart nothing for their secrets", where: onLocal,
		opts:    localenv.Options{NoRestartOn: []string{"lldap"}},
		run:     "rotation/new-credential-restarts-lldap-replicas",
		reasons: []string{"to restart its service with a new credential within the TTL 20s; saw restart count 0"},
	}},
	"rotation/restart-secret-restarts": {{
		name: "lldap's pods do not watch key-seed, a secret with restart", where: onLocal,
		opts:    localenv.Options{NoRestartOn: []string{"lldap/key-seed"}},
		run:     "rotation/(restart-secret-restarts|secret-without-restart-restarts-nothing)",
		reasons: []string{"expected pod directory-lldap-0 to restart its service in the same pod; saw restart count 0 still"},
	}},
	"rotation/secret-without-restart-restarts-nothing": {{
		name: "the pods restart for every secret, those without restart too", where: onLocal,
		opts:    localenv.Options{RestartOnEverySecret: true},
		run:     "rotation/(restart-secret-restarts|secret-without-restart-restarts-nothing)",
		reasons: []string{"expected pod directory-lldap-0 to leave its service running; saw restart count"},
	}},
	"rotation/sidecar-restart-restarts-nothing": {{
		name: "the pods restart their service whenever their sidecar restarts", where: onLocal,
		opts:    localenv.Options{RestartWithSidecar: true},
		run:     "rotation/sidecar-restart-.*",
		reasons: []string{"pod directory-worker-0 restarted its service (restart count 1, was 0;", "after its sidecar restarted, though no secret with restart changed"},
	}},
	"rotation/sidecar-restart-restarts-pki": {{
		name: "authelia's pod restarts nothing for its secrets", where: onLocal,
		opts:    localenv.Options{NoRestartOn: []string{"authelia"}},
		run:     "rotation/sidecar-restart-.*",
		reasons: []string{"pod directory-authelia-0", "a new tls.pem (a secret with parameters and restart), and the service's restart count 0 still"},
	}},
}

// TestEveryScenarioHasABreakingCase walks the registry: a scenario with
// no breaking case fails the test, and so does a case of no scenario.
func TestEveryScenarioHasABreakingCase(t *testing.T) {
	ids := scenarios.IDs()
	for _, id := range ids {
		if len(breakingCases[id]) == 0 {
			t.Errorf("scenario %s has no breaking case: add one to breakingCases, a break in a real environment that fails it naming the cause", id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(breakingCases)) {
		if !slices.Contains(ids, id) {
			t.Errorf("breakingCases has cases of %s, which is no scenario", id)
		}
		for _, c := range breakingCases[id] {
			if len(c.reasons) == 0 || (c.where == onLocal) == (c.breakCluster != nil) {
				t.Errorf("%s: %q: a case needs the reasons its failure names, and a break where it runs", id, c.name)
			}
		}
	}
}

// TestBreakingCasesLocal runs each case of a local environment: its own
// environment, broken, and the scenario's suite (or the case's run) on
// it.
func TestBreakingCasesLocal(t *testing.T) {
	for _, id := range slices.Sorted(maps.Keys(breakingCases)) {
		for _, c := range breakingCases[id] {
			if c.where != onLocal {
				continue
			}
			t.Run(id+"/"+c.name, func(t *testing.T) {
				if c.needs == "lldap" && os.Getenv("PODROLES_IMAGE_LLDAP") == "" {
					t.Skip("needs lldap's image (PODROLES_IMAGE_LLDAP), which this project's machines cannot get")
				}
				t.Parallel()
				env := vmtest.NewEnv(t, c.opts)
				requireOpenBao(t, env)
				if c.breakLocal != nil {
					c.breakLocal(t, env)
				}
				results := runMatching(t, env, 5*time.Second, selection(id, c.run), suiteOf(id))
				judgeBreak(t, id, c, results)
			})
		}
	}
}

// judgeBreak checks the results of a broken world: the scenario failed
// naming each reason, the others that the break fails too failed, and no
// other failed.
func judgeBreak(t *testing.T, id string, c breakingCase, results map[string]*scenarios.Result) {
	t.Helper()
	r := results[id]
	if r == nil {
		t.Fatalf("%s did not run", id)
	}
	for _, want := range c.reasons {
		if r.Status != scenarios.Failed || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: %s: %s\nwant a failure naming %q", id, r.Status, r.Reason, want)
		}
	}
	for other, res := range results {
		why, expected := c.alsoFails[other]
		switch {
		case other == id:
		case expected && res.Status != scenarios.Failed:
			t.Errorf("%s: %s, but the break fails it too (%s)", other, res.Status, why)
		case !expected && res.Status == scenarios.Failed:
			t.Errorf("%s failed too, though the break is %s's: %s", other, id, res.Reason)
		}
	}
	t.Logf("%s", r.Line())
}

// selection is the scenarios a case runs: run, or the scenario's whole
// suite.
func selection(id, run string) *regexp.Regexp {
	if run == "" {
		return nil
	}
	return regexp.MustCompile("^(" + run + ")$")
}

func suiteOf(id string) string {
	suite, _, _ := strings.Cut(id, "/")
	return suite
}

// wrongSecretFile is a case of files-hold-their-values: a pod's sidecar
// stopped, as one that died, and a file of its secrets changed, as a
// sidecar that rendered it wrongly would leave it.
func wrongSecretFile(name, role string, pod int, file string, content func(old []byte) string, reasons ...string) breakingCase {
	return breakingCase{
		name: name, where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
			inv := loadInventory(t, env)
			p := inv.Roles[role].Pods[pod]
			stop(t, env, "sidecar-"+p.Name)
			path := filepath.Join(p.SecretsDir, file)
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content(old)), 0o600); err != nil {
				t.Fatal(err)
			}
		},
		reasons: append(reasons, fmt.Sprintf("pod %s-%s-%d", "directory", role, pod)),
		// The other secrets scenarios look at the same pod, whose file
		// is wrong in a way they may see too (a rewrite that OpenBao does
		// not explain).
		run: "secrets/files-hold-their-values",
	}
}

// lldapOptions run the lldap role from lldap's image, where a variable
// names it.
func lldapOptions() localenv.Options {
	im := localenv.ImagesFromEnv()
	im.LLDAP = os.Getenv("PODROLES_IMAGE_LLDAP")
	return localenv.Options{Provider: localenv.ProviderContainers, Images: im}
}

func stop(t *testing.T, env *localenv.Env, name string) {
	t.Helper()
	if err := env.Stop(name); err != nil {
		t.Fatal(err)
	}
}

func loadInventory(t *testing.T, env *localenv.Env) *inventory.Inventory {
	t.Helper()
	inv, err := inventory.Load(env.Inventory, nil)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// writeNodeFile writes a file of the node's own where its main pod keeps
// it.
func writeNodeFile(t *testing.T, env *localenv.Env, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(env.MainPodFile(path), data, 0o644); err != nil {
		t.Fatal(err)
	}
}
