package scenarios_test

import (
	"context"
	"crypto/sha256"
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
	"sigs.k8s.io/yaml"

	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/pki"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios"
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
	// onLocal: a local environment of its own (harness/localenv).
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
				writeNodeFile(t, env, env.Servers().LDAPCAFile(), other.PEM)
			},
			reasons:   []string{"certificate signed by unknown authority"},
			alsoFails: map[string]string{"ldap/each-pod-binds": "the pods' certificates are the Service's"},
		},
		{
			name: "a certificate for another name", where: onLocal,
			opts:    localenv.Options{Faults: localenv.Faults{CertNames: []string{"other.example.org"}}},
			reasons: []string{"certificate is valid for other.example.org, not directory-lldap.directory.svc.cluster.local"},
			alsoFails: map[string]string{
				"ldap/each-pod-binds":   "the pods' certificates are the Service's",
				"ldap/wrong-ca-refused": "a name is checked before the CA: refused for the name, not the CA",
			},
		},
		{
			name: "the reader's password changed in the directory, not in the contract's file", where: onLocal,
			breakLocal: func(t *testing.T, env *localenv.Env) {
				if err := env.Servers().ChangePassword(context.Background(), "authelia-bind", "a-new-password"); err != nil {
					t.Fatal(err)
				}
			},
			reasons:   []string{"the bind with the password of the contract's /var/lib/lldap-reader/bind-password was refused"},
			alsoFails: map[string]string{"ldap/each-pod-binds": "each pod refuses it too"},
		},
	},
	"ldap/plain-port-not-on-service": {{
		name: "the Service answers on the plain LDAP port it does not declare", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{PlainPortOnService: true}},
		reasons: []string{"the Service directory-lldap.directory.svc.cluster.local answers at ", ":3890, a plain LDAP port"},
	}},
	"ldap/each-pod-binds": {{
		name: "a replica's server stopped", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) { stop(t, env, "slapd-1") },
		reasons:    []string{"pod directory-lldap-1: at ldaps://"},
	}},
	"ldap/wrong-ca-refused": {{
		name: "an expired certificate on the Service: refused, but not for an unknown CA", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{ExpiredCertificate: true}},
		reasons: []string{"refused, but not for the expected reason", "certificate has expired"},
		alsoFails: map[string]string{
			"ldap/service-ldaps-bind": "the certificate has expired",
			"ldap/each-pod-binds":     "the certificate has expired",
			"ldap/wrong-name-refused": "refused for the date before the name",
		},
	}},
	"ldap/wrong-name-refused": {{
		name: "a certificate valid for any name under .invalid", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{CertNames: []string{"directory-lldap.directory.svc.cluster.local", "*.invalid"}}},
		reasons: []string{"the handshake succeeded"},
	}},

	// lldap's HTTP API needs lldap's image, which this project's
	// machines cannot get: these run where PODROLES_IMAGE_LLDAP names
	// one.
	"lldap-http/login-through-service": {{
		name: "the admin's password changed in lldap, not in its file", where: onLocal, needs: "lldap",
		opts: lldapOptions(),
		breakLocal: func(t *testing.T, env *localenv.Env) {
			if err := env.Servers().ChangePassword(context.Background(), "admin", "a-new-password"); err != nil {
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
		reasons:    []string{"every other pod accepts the token"},
		alsoFails:  map[string]string{"lldap-http/login-at-each-pod": "the replica is gone"},
	}},

	"postgres/data-outside-pod": {{
		name: "PostgreSQL at the address of the role's first pod", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{PostgresInPod: true}},
		reasons: []string{"in pod directory-lldap-0 of role lldap (pod directory-lldap-0): its data would go with the pod"},
	}},
	"postgres/one-opentofu-state": {{
		name: "a second OpenTofu state", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
			ctx := context.Background()
			db, err := pgx.Connect(ctx, env.Servers().PostgresDSN())
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
		opts:    localenv.Options{Faults: localenv.Faults{ServiceBeforeSecrets: true}},
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
		opts:      localenv.Options{Faults: localenv.Faults{PortalTrustsOtherCA: true}},
		reasons:   []string{"saw HTTP 502", "could not reach authelia"},
		alsoFails: map[string]string{"authelia/wrong-password-refused": "the right password must log in first", "authelia/login-stored-in-postgres": "no login"},
	}},
	"authelia/wrong-password-refused": {{
		name: "the directory takes a wrong password of the admin too", where: onLocal,
		breakLocal: func(t *testing.T, env *localenv.Env) {
			if err := env.Servers().AcceptPassword(context.Background(), "admin", scenarios.WrongPassword("admin")); err != nil {
				t.Fatal(err)
			}
		},
		reasons: []string{"log in with a wrong password", "expected a wrong password of admin to be refused with HTTP 401; saw HTTP 200"},
	}},
	"authelia/login-stored-in-postgres": {{
		name: "authelia reaches Postgres with a credential that never expires", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{AutheliaStaticCredential: true}},
		reasons: []string{"authelia connected as authelia_static, a credential that does not expire"},
	}, {
		name: "authelia reaches Postgres with a credential valid until infinity", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{AutheliaStaticCredential: true, AutheliaStaticValidUntil: "infinity"}},
		reasons: []string{"authelia connected as authelia_static, a credential that does not expire"},
	}},

	"rotation/new-credential-restarts-authelia": {{
		name: "authelia's pod restarts nothing for its secrets", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{NoRestartOn: []string{"authelia"}}},
		run:     "rotation/new-credential-restarts-authelia",
		reasons: []string{"expected pod directory-authelia-0 (uid", "to restart its service with a new credential within the TTL 20s; saw 0 exits"},
	}},
	"rotation/new-credential-restarts-lldap-replicas": {{
		name: "lldap's pods restart nothing for their secrets", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{NoRestartOn: []string{"lldap"}}},
		run:     "rotation/new-credential-restarts-lldap-replicas",
		reasons: []string{"to restart its service with a new credential within the TTL 20s; saw 0 exits"},
	}},
	"rotation/restart-secret-restarts": {{
		name: "lldap's pods do not watch key-seed, a secret with restart", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{NoRestartOn: []string{"lldap/key-seed"}}},
		run:     "rotation/(restart-secret-restarts|secret-without-restart-restarts-nothing)",
		reasons: []string{"expected pod directory-lldap-0 to restart its service in the same pod after key-seed changed there; saw 0 exits still"},
	}},
	"rotation/secret-without-restart-restarts-nothing": {{
		name: "the pods restart for every secret, those without restart too", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{RestartOnEverySecret: true}},
		run:     "rotation/(restart-secret-restarts|secret-without-restart-restarts-nothing)",
		reasons: []string{"expected pod directory-lldap-0 to leave its service running; saw its service exited (exit code 0 (Completed)"},
	}},
	"rotation/sidecar-restart-restarts-nothing": {{
		name: "the pods restart their service whenever their sidecar restarts", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{RestartWithSidecar: true}},
		run:     "rotation/sidecar-restart-.*",
		reasons: []string{"pod directory-worker-0: its service exited (exit code 143", "after its sidecar restarted, though no secret with restart changed"},
	}},
	"rotation/sidecar-restart-restarts-pki": {{
		name: "authelia's pod restarts nothing for its secrets", where: onLocal,
		opts:    localenv.Options{Faults: localenv.Faults{NoRestartOn: []string{"authelia"}}},
		run:     "rotation/sidecar-restart-.*",
		reasons: []string{"pod directory-authelia-0", "a new tls.pem (a secret with parameters and restart), and the service's 0 exits still"},
	}},
}

// notCoveredHere are the scenarios whose every breaking case needs what
// make test does not give, with why. A case that never runs is no
// coverage: the registry test counts only the cases that run.
var notCoveredHere = map[string]string{
	"lldap-http/login-through-service":           "lldap's image",
	"lldap-http/login-at-each-pod":               "lldap's image",
	"lldap-http/token-accepted-by-other-replica": "lldap's image",
}

// runsHere says a breaking case runs in make test: it needs nothing that
// make test does not give.
func (c breakingCase) runsHere() bool {
	return c.needs == "" || c.needs == "lldap" && os.Getenv("PODROLES_IMAGE_LLDAP") != ""
}

// TestEveryScenarioHasABreakingCase walks the registry: a scenario with
// no breaking case that runs here fails the test, unless notCoveredHere
// names it; a case of no scenario fails it too.
func TestEveryScenarioHasABreakingCase(t *testing.T) {
	ids := scenarios.IDs()
	for _, id := range ids {
		runs := slices.ContainsFunc(breakingCases[id], breakingCase.runsHere)
		why, listed := notCoveredHere[id]
		switch {
		case len(breakingCases[id]) == 0:
			t.Errorf("scenario %s has no breaking case: add one to breakingCases, a break in a real environment that fails it naming the cause", id)
		case !runs && !listed:
			t.Errorf("scenario %s: no breaking case of it runs here (each needs what make test does not give): add one that does", id)
		case runs && listed:
			t.Errorf("scenario %s: a breaking case of it runs here: take it out of notCoveredHere", id)
		case listed:
			t.Logf("scenario %s: no breaking case runs here, for lack of %s", id, why)
		}
	}
	for id := range notCoveredHere {
		if !slices.Contains(ids, id) {
			t.Errorf("notCoveredHere names %s, which is no scenario", id)
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
// it. Its cases run beside TestRealNode, in the local slots.
func TestBreakingCasesLocal(t *testing.T) {
	t.Parallel()
	for _, id := range slices.Sorted(maps.Keys(breakingCases)) {
		for _, c := range breakingCases[id] {
			if c.where != onLocal {
				continue
			}
			t.Run(id+"/"+c.name, func(t *testing.T) {
				if !c.runsHere() {
					t.Skip("needs lldap's image (PODROLES_IMAGE_LLDAP), which this project's machines cannot get")
				}
				t.Parallel()
				localSlot(t)
				env := testenv.NewEnv(t, c.opts)
				requireOpenBao(t, env)
				if c.breakLocal != nil {
					given := runnerInputs(t, env.Inventory)
					c.breakLocal(t, env)
					requireDeploymentBroken(t, env.Inventory, given)
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
		if r.Status != scenarios.Failed || !namesExactly(r.Reason, want) {
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

// namesExactly says reason holds want, and a name that want ends with
// ends there too: "pod directory-lldap" is no match for a failure of pod
// directory-lldap-1, which any pod of the role would match.
func namesExactly(reason, want string) bool {
	nameChar := func(b byte) bool {
		return b == '-' || b == '_' || b == '.' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(reason[i:], want)
		if j < 0 {
			return false
		}
		end := i + j + len(want)
		if end == len(reason) || want == "" || !nameChar(want[len(want)-1]) || !nameChar(reason[end]) || reason[end] == '.' {
			return true
		}
		i += j + 1
	}
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
	im, err := localenv.ImagesFromEnv()
	if err != nil {
		panic(err)
	}
	im.LLDAP = os.Getenv("PODROLES_IMAGE_LLDAP")
	return localenv.Options{Provider: localenv.ProviderContainers, Images: im}
}

func stop(t *testing.T, env *localenv.Env, name string) {
	t.Helper()
	if err := env.Servers().Stop(name); err != nil {
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
	if err := os.WriteFile(env.Servers().MainPodFile(path), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestNamesExactly(t *testing.T) {
	for _, c := range []struct {
		reason, want string
		ok           bool
	}{
		{"pod directory-lldap-1: at ldaps://x", "pod directory-lldap-1", true},
		{"pod directory-lldap-1: at ldaps://x", "pod directory-lldap", false},
		{"pod directory-lldap-10: refused; pod directory-lldap-1: refused", "pod directory-lldap-1", true},
		{"exit code 143 (Error)", "exit code 143", true},
		{"exit code 1430", "exit code 143", false},
		{"the file /etc/ca.pem.", "/etc/ca.pem", true},
		{"pod directory-lldap-1: ", "pod directory-lldap-1: ", true},
	} {
		if got := namesExactly(c.reason, c.want); got != c.ok {
			t.Errorf("namesExactly(%q, %q) = %v", c.reason, c.want, got)
		}
	}
}

// podSideKeys are the inventory's keys of files that are the pods' own:
// the deployment, which a break may change.
var podSideKeys = []string{"statusFile", "secretsDir", "rootDir", "sidecarStatusFile", "sidecarRestartFile"}

// runnerInputs hashes what the runner is given: the inventory, and each
// file it names that is not a pod's own (the facts, OpenBao's token, the
// admin's password, the database's DSN, the portal's CA).
func runnerInputs(t *testing.T, inventoryFile string) map[string]string {
	t.Helper()
	out := map[string]string{}
	hash := func(path string) {
		if data, err := os.ReadFile(path); err == nil {
			out[path] = fmt.Sprintf("%x", sha256.Sum256(data))
		}
	}
	hash(inventoryFile)
	data, err := os.ReadFile(inventoryFile)
	if err != nil {
		t.Fatal(err)
	}
	var tree any
	if err := yaml.Unmarshal(data, &tree); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if path, ok := e.(string); ok && strings.HasSuffix(k, "File") && !slices.Contains(podSideKeys, k) {
					if !filepath.IsAbs(path) {
						path = filepath.Join(filepath.Dir(inventoryFile), path)
					}
					hash(path)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(tree)
	return out
}

// requireDeploymentBroken fails a case whose break changed what the
// runner is given: a break must change the deployment, or a suite that
// judges the harness would pass the test.
func requireDeploymentBroken(t *testing.T, inventoryFile string, before map[string]string) {
	t.Helper()
	for _, path := range changedInputs(before, runnerInputs(t, inventoryFile)) {
		t.Errorf("the break changed %s, which the runner is given, not the deployment", path)
	}
}

// changedInputs are the paths whose hash differs, or that are gone.
func changedInputs(before, after map[string]string) []string {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(before)) {
		if after[path] != before[path] {
			out = append(out, path)
		}
	}
	return out
}

// TestABreakOfTheRunnersInputIsCaught: a break that rewrites a file the
// inventory names for the runner, or the inventory, is told apart from
// one that changes a pod's files.
func TestABreakOfTheRunnersInputIsCaught(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("secrets/openbao-token", "t")
	write("pods/p/status.json", "{}")
	write("inventory.yaml", "node: n\nopenbao: {address: http://127.0.0.1:1, tokenFile: secrets/openbao-token}\nroles: {r: {pods: [{name: p, address: 127.0.0.1, statusFile: pods/p/status.json}]}}\n")
	inv := filepath.Join(dir, "inventory.yaml")
	before := runnerInputs(t, inv)
	write("pods/p/status.json", `{"restartCount": 1}`)
	if got := changedInputs(before, runnerInputs(t, inv)); len(got) != 0 {
		t.Errorf("a pod's status file counted as the runner's input: %v", got)
	}
	write("secrets/openbao-token", "another")
	if got := changedInputs(before, runnerInputs(t, inv)); !slices.Equal(got, []string{filepath.Join(dir, "secrets/openbao-token")}) {
		t.Errorf("changed = %v, want the token file", got)
	}
}
