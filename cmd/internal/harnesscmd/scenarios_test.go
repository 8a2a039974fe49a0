package harnesscmd

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/cmd/internal/nodecmd"
	"github.com/fediversity/podroles/cmd/internal/plancmd"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/golden"
	"github.com/fediversity/podroles/report"
	"github.com/fediversity/podroles/scenarios"
)

// run runs the commands under a root of their own, as a binary's main
// does.
func run(t *testing.T, args ...string) clitest.Result {
	t.Helper()
	return clitest.Run(t, allCommands, args...)
}

// allCommands are podroles' commands: the node commands, plan and these.
func allCommands(ios *cli.Streams) []*cobra.Command {
	return append(append(nodecmd.Commands(ios), plancmd.NewCmd(ios)), Commands(ios)...)
}

func repo(path string) string { return filepath.Join("..", "..", "..", path) }

func TestMain(m *testing.M) { testenv.Main(m) }

func TestScenariosRun(t *testing.T) {
	env := testenv.NewEnv(t, localenv.Options{})
	out := filepath.Join(t.TempDir(), "scenarios.xml")
	r := run(t, "scenarios", "run", "--inventory", env.Inventory, "--suite", "ldap,postgres", "--format", "junit", "-o", out)
	// The local lldap role has no bind-password secret, whose KV entry
	// reader-password-from-kv compares, and the local node no unit
	// lldap-publish-roles (the real node has both).
	want := "node directory: 7 passed, 0 failed, 2 skipped"
	if env.Servers().OpenBaoURL() == "" {
		// No sidecar writes the URL the postgres suite reads in the pods.
		want = "node directory: 5 passed, 0 failed, 4 skipped"
	}
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, want) {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	data, _ := os.ReadFile(out)
	var suites report.Suites
	if err := xml.Unmarshal(data, &suites); err != nil || suites.Tests != 9 || suites.Failures != 0 {
		t.Errorf("junit: %v %+v", err, suites)
	}
	// Secrets never reach a report.
	for _, f := range []string{"bind-password", "postgres-dsn"} {
		secret, _ := os.ReadFile(filepath.Join(env.Dir, "secrets", f))
		if s := strings.TrimSpace(string(secret)); strings.Contains(r.Out, s) || strings.Contains(string(data), s) {
			t.Errorf("the report shows the secret of %s", f)
		}
	}

	// The runner's self-checks pass here, but prove nothing of the node:
	// a run of them alone (and skips) is a run in which no scenario ran.
	selfChecks := []string{"scenarios", "run", "--inventory", env.Inventory, "--suite", "ldap,lldap-http", "--run", "wrong-.*|lldap-http/.*"}
	r = run(t, selfChecks...)
	want = "podroles scenarios run: no scenario ran: of the 5 selected, 2 passed only as runner self-checks (no evidence about the node) and 3 were skipped (each says why in the report); --allow-skip lets such a run pass\n"
	if r.Code != cli.ExitFailed || r.ErrOut != want || !strings.Contains(r.Out, "node directory: 2 passed, 0 failed, 3 skipped") {
		t.Errorf("self-checks and skips alone: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, append(selfChecks, "--allow-skip", "--format", "json")...)
	var rep scenarios.Report
	if err := json.Unmarshal([]byte(r.Out), &rep); r.Code != cli.ExitOK || err != nil || !rep.Summary.OK || rep.Summary.SelfChecks != 2 {
		t.Errorf("self-checks alone with --allow-skip: exit %d, %v, %+v\n%s", r.Code, err, rep.Summary, r.ErrOut)
	}
	// Beside a scenario that judges the node, they are no longer alone.
	if r := run(t, "scenarios", "run", "--inventory", env.Inventory, "--suite", "ldap", "--run", "wrong-.*|each-pod-binds"); r.Code != cli.ExitOK {
		t.Errorf("self-checks and each-pod-binds: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}

	env.Servers().Stop("slapd-0")
	r = run(t, "scenarios", "run", "--inventory", env.Inventory, "--run", "each-pod", "--patience", "2s")
	if r.Code != cli.ExitFailed || !strings.Contains(r.Out, "FAILED  ldap/each-pod-binds") || !strings.Contains(r.Out, "pod directory-lldap-0") {
		t.Errorf("a stopped replica: exit %d\n%s", r.Code, r.Out)
	}
}

func TestScenariosCannotRun(t *testing.T) {
	dir := t.TempDir()
	writeFacts(t, dir)
	bad := filepath.Join(dir, "inv.yaml")
	os.WriteFile(bad, []byte("node: web\nfactsFile: facts.json\nroles: {}\n"), 0o644)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("node: web\nfactsFile: facts.json\nroles:\n  r: {pods: [{name: p, address: 127.0.0.1}]}\n"), 0o644)
	drift := filepath.Join(dir, "drift.yaml")
	os.WriteFile(drift, []byte("node: web\nfactsFile: facts.json\nroles:\n  r: {secrets: {}, pods: [{name: p, address: 127.0.0.1}]}\n"), 0o644)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"), 0o600)
	noFacts := filepath.Join(dir, "nofacts.yaml")
	os.WriteFile(noFacts, []byte("node: web\nroles:\n  r: {pods: [{name: p, address: 127.0.0.1}]}\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"scenarios", "run"}, "podroles scenarios run: give --inventory FILE"},
		{[]string{"scenarios", "run", "--kubeconfig", kubeconfig}, "podroles scenarios run: --kubeconfig and --in-cluster need --namespace and --node"},
		{[]string{"scenarios", "run", "--in-cluster", "--kubeconfig", bad}, "podroles scenarios run: --in-cluster and --kubeconfig exclude each other"},
		{[]string{"scenarios", "run", "--kubeconfig", kubeconfig, "--namespace", "x", "--node", "nope", repo("examples/directory.nix")}, "podroles scenarios run: --node nope: the sources give no node nope"},
		// A kubeconfig that cannot be read fails before the node is evaluated.
		{[]string{"scenarios", "run", "--kubeconfig", filepath.Join(dir, "none"), "--namespace", "x", "--node", "directory", repo("examples/directory.nix")}, "podroles scenarios run: --kubeconfig " + filepath.Join(dir, "none") + ": stat "},
		{[]string{"scenarios", "run", "--kubeconfig", bad, "--namespace", "x", "--node", "directory", repo("examples/directory.nix")}, "podroles scenarios run: --kubeconfig " + bad + ": invalid configuration"},
		{[]string{"env", "up", "--dir", dir, "--node", "nope", "--cluster", repo("examples/directory.nix")}, "podroles env up: --node nope: the sources give no node nope"},
		// Outside a pod there is no service account to reach the cluster.
		{[]string{"scenarios", "run", "--in-cluster", "--namespace", "directory", "--node", "directory", repo("examples/directory.nix")}, "podroles scenarios run: in-cluster config: "},
		{[]string{"scenarios", "run", "--inventory", bad}, "podroles scenarios run: inventory " + bad + ": roles: no roles"},
		{[]string{"scenarios", "run", "--inventory", "nope.yaml"}, "podroles scenarios run: inventory nope.yaml: no such file"},
		{[]string{"scenarios", "run", "--inventory", noFacts}, "podroles scenarios run: inventory " + noFacts + ": factsFile: missing, and no node's sources given"},
		{[]string{"scenarios", "run", "--inventory", drift}, "podroles scenarios run: inventory " + drift + ": the inventory and node web disagree, and the node is the truth: roles.r.secrets lacks s, which the node has as fediversity.podRoles.roles.r.secrets.s"},
		{[]string{"scenarios", "run", "--inventory", good, repo("examples/directory.nix")}, "podroles scenarios run: --node web: the sources give no node web"},
		{[]string{"scenarios", "run", "--inventory", good, "--suite", "ldapp"}, `podroles scenarios run: --suite: no suite "ldapp"`},
		{[]string{"scenarios", "run", "--inventory", good, "--run", "("}, `podroles scenarios run: --run "(": error parsing regexp`},
		{[]string{"scenarios", "run", "--inventory", good, "--run", "nothing-matches"}, "podroles scenarios run: no scenario matches"},
		{[]string{"env", "up"}, `podroles env up: required flag(s) "dir" not set`},
		{[]string{"env", "up", "--dir", dir, "--image", "lldap=x"}, "podroles env up: --image is for --provider containers"},
		{[]string{"env", "up", "--dir", dir, "--provider", "containers", "--image", "ldap=x"}, `podroles env up: --image "ldap=x": give NAME=IMAGE, NAME one of servers, postgres, haproxy, nginx, openbao, authelia, lldap`},
		{[]string{"env", "down", "--dir", dir}, "podroles env down: " + dir + " has no state.json: no environment was started there"},
	}
	for _, c := range cases {
		r := run(t, c.args...)
		if r.Code != cli.ExitCantRun || !strings.HasPrefix(r.ErrOut, c.want) || strings.Count(r.ErrOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q, want exit 2 and %q", c.args, r.Code, r.ErrOut, c.want)
		}
	}
	// With nothing to run against, every scenario is skipped: no
	// scenario ran, which is no pass, unless --allow-skip says so.
	total := len(scenarios.IDs())
	r := run(t, "scenarios", "run", "--inventory", good)
	if r.Code != cli.ExitFailed || !strings.Contains(r.Out, fmt.Sprintf("0 passed, 0 failed, %d skipped", total)) ||
		r.ErrOut != fmt.Sprintf("podroles scenarios run: no scenario ran: all %d selected were skipped (each says why in the report); --allow-skip lets such a run pass\n", total) {
		t.Errorf("all skipped: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, "scenarios", "run", "--inventory", good, "--allow-skip", "--format", "json")
	var rep scenarios.Report
	if err := json.Unmarshal([]byte(r.Out), &rep); r.Code != cli.ExitOK || err != nil || !rep.Summary.OK || rep.Summary.Skipped != total {
		t.Errorf("all skipped with --allow-skip: exit %d, %v\n%s%s", r.Code, err, r.Out, r.ErrOut)
	}
	r = run(t, "scenarios", "run", "--inventory", good, "--format", "json")
	if err := json.Unmarshal([]byte(r.Out), &rep); r.Code != cli.ExitFailed || err != nil || rep.Summary.OK {
		t.Errorf("all skipped, as JSON: exit %d, ok %v, %v", r.Code, rep.Summary.OK, err)
	}
}

// writeFacts writes the facts of node web, of one role r with a secret s,
// into dir/facts.json.
func writeFacts(t *testing.T, dir string) {
	t.Helper()
	one, svc := 1, "svc"
	data, err := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{{Name: "web", PodRoles: facts.PodRoles{Roles: map[string]facts.Role{
		"r": {Replicas: &one, Service: &svc, Secrets: map[string]facts.Secret{"s": {Path: "secret/data/s", Field: &svc}}},
	}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "facts.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestScenariosList(t *testing.T) {
	r := run(t, "scenarios", "list")
	for _, want := range []string{"ldap", "service-ldaps-bind", "[SC-004, US1-15]", "postgres", "one-opentofu-state", "lldap-http",
		"wrong-ca-refused                         [US1-15]                    (runner self-check, no evidence about the node) "} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("list lacks %q:\n%s", want, r.Out)
		}
	}
	// The suites in the registry's order, each once, and only the two
	// self-checks marked.
	var names []string
	for _, su := range scenarios.Suites() {
		names = append(names, su.Name)
	}
	last := -1
	for _, name := range names {
		i := strings.Index(r.Out, "\n"+name+" ")
		if !strings.HasPrefix(r.Out, name+" ") && (i < 0 || i < last) {
			t.Errorf("suite %s is not listed in the registry's order %v", name, names)
		}
		last = i
	}
	if n := strings.Count(r.Out, "(runner self-check"); n != 2 {
		t.Errorf("%d scenarios marked as self-checks, want ldap's two", n)
	}
}

// TestScenariosRunOnACluster discovers the directory example's world in a
// control plane of real components and runs the deployments suite on it.
func TestScenariosRunOnACluster(t *testing.T) {
	cp := testenv.NewControlPlane(t, true)
	example := repo("examples/directory.nix")
	r := run(t, "scenarios", "run", "--kubeconfig", cp.Kubeconfig, "--namespace", "default", "--node", "directory", example, "--suite", "deployments")
	if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "Deployment default/directory does not exist: is the node deployed to namespace default?") {
		t.Fatalf("before the deploy: exit %d\n%s", r.Code, r.ErrOut)
	}
	client, err := cp.Client()
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if r := run(t, "plan", example, "--namespace", "default", "--format", "json", "-o", planFile); r.Code != cli.ExitOK {
		t.Fatal(r.ErrOut)
	}
	data, _ := os.ReadFile(planFile)
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	json.Unmarshal(data, &list)
	ctx := context.Background()
	for _, item := range list.Items {
		var kind struct{ Kind string }
		json.Unmarshal(item, &kind)
		switch kind.Kind {
		case "Deployment":
			var d appsv1.Deployment
			json.Unmarshal(item, &d)
			if _, err := client.AppsV1().Deployments("default").Create(ctx, &d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		case "Service":
			var s corev1.Service
			json.Unmarshal(item, &s)
			if _, err := client.CoreV1().Services("default").Create(ctx, &s, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// KWOK's pods run nothing, but are Running and ready: the plan's own
	// objects pass what needs no exec (TestEnvUpWithCluster runs every
	// suite on real pods).
	r = run(t, "scenarios", "run", "--kubeconfig", cp.Kubeconfig, "--namespace", "default", "--node", "directory", example,
		"--suite", "deployments", "--run", "deployments-as-planned|services-as-planned", "--patience", "30s")
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "node directory: 2 passed, 0 failed, 0 skipped") {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	dead := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(dead, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\"}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600)
	r = run(t, "scenarios", "run", "--kubeconfig", dead, "--namespace", "default", "--node", "directory", example)
	if r.Code != cli.ExitCantRun || !strings.HasPrefix(r.ErrOut, "podroles scenarios run: the API server https://127.0.0.1:1 does not answer") || strings.Count(r.ErrOut, "\n") != 1 {
		t.Errorf("an unreachable API server: exit %d\n%s", r.Code, r.ErrOut)
	}
}

// TestProgressLine checks the live line a terminal shows: the scenarios
// that run, redrawn in place, and each failure printed as it comes.
func TestProgressLine(t *testing.T) {
	var b strings.Builder
	progress := progressLine(&b)
	failed := &scenarios.Result{Suite: "ldap", Scenario: "b", Spec: []string{"SC-004"}, Status: scenarios.Failed, Reason: "s: boom"}
	progress(scenarios.Event{Suite: "ldap", Scenario: "a", Total: 2})
	progress(scenarios.Event{Suite: "ldap", Scenario: "b", Total: 2})
	progress(scenarios.Event{Suite: "ldap", Scenario: "b", Result: failed, Done: 1, Total: 2})
	progress(scenarios.Event{Suite: "ldap", Scenario: "a", Result: &scenarios.Result{Status: scenarios.Passed}, Done: 2, Total: 2})
	want := "\r\033[K[0/2] ldap/a" + "\r\033[K[0/2] ldap/a, ldap/b" + "\r\033[K" + failed.Line() + "\n[1/2] ldap/a" + "\r\033[K"
	if b.String() != want {
		t.Errorf("progress:\n%q\nwant\n%q", b.String(), want)
	}
}

// TestEnvUpWithContainers is the laptop's walk-through with the
// containers provider: env up, the suites, env down, and nothing left in
// the engine; the containers outlive the env up that started them.
func TestEnvUpWithContainers(t *testing.T) {
	testenv.Engine(t)
	if os.Getenv(servers.DirEnv) == "" {
		t.Skipf("%s is not set: the secrets suite needs the Vault that make servers builds", servers.DirEnv)
	}
	// --image reaches the engine: lldap's image from a registry that
	// refuses (on loopback) fails env up in one line naming both, and what
	// started before is gone.
	failed := t.TempDir()
	const image = "127.0.0.1:1/lldap/lldap:v0.6.1"
	r := run(t, "env", "up", "--dir", failed, "--provider", "containers", "--loopback", localenv.RandomLoopback(), "--image", "lldap="+image)
	if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "container lldap-0: pull "+image) || strings.Count(r.ErrOut, "\n") != 1 {
		t.Errorf("env up with an image that cannot be pulled: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	if left, err := containers.Leftovers(context.Background(), failed); err != nil || len(left) > 0 {
		t.Errorf("after a failed env up the engine holds %v (%v)", left, err)
	}

	dir := t.TempDir()
	t.Cleanup(func() { localenv.Down(dir) })
	r = run(t, "env", "up", "--dir", dir, "--provider", "containers", "--loopback", localenv.RandomLoopback())
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "environment up in") {
		t.Fatalf("env up: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, "scenarios", "run", "--inventory", filepath.Join(dir, "inventory.yaml"), "--suite", "ldap,postgres,secrets")
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "0 failed, 2 skipped") || !strings.Contains(r.Out, "SKIPPED ldap/reader-password-from-kv") ||
		!strings.Contains(r.Out, "SKIPPED ldap/roles-published") {
		t.Errorf("scenarios run: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	if r := run(t, "env", "down", "--dir", dir); r.Code != cli.ExitOK {
		t.Fatalf("env down: exit %d\n%s", r.Code, r.ErrOut)
	}
	left, err := containers.Leftovers(context.Background(), dir)
	if err != nil || len(left) > 0 {
		t.Errorf("after env down the engine holds %v (%v)", left, err)
	}
}

// TestEnvUpWithCluster: env up --cluster deploys the directory example as
// real pods on the machine's real node; the suites pass on what scenarios
// run discovers there; a second env up --cluster finds the node taken and
// names who has it; env down stops the pods, the node and the control
// plane, and the node's stop checks that the machine is as before.
func TestEnvUpWithCluster(t *testing.T) {
	if os.Getenv(servers.DirEnv) == "" || os.Getenv(localenv.EnvImageServers) == "" {
		t.Skip("make test builds the kubelet, the control plane and the images of the real node")
	}
	if os.Geteuid() != 0 {
		t.Skip("the real node runs as root only")
	}
	// As mktemp -d makes it: the owner's alone.
	dir, err := os.MkdirTemp("", "podroles-env-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// What is still mounted there is not removed: it would be lost.
		if err := localenv.Down(dir); err != nil {
			t.Errorf("env down: %v (%s is left for a look)", err, dir)
			return
		}
		os.RemoveAll(dir)
	})
	example := repo("examples/directory.nix")
	// The node is the machine's: another package's tests may hold it.
	r := run(t, "env", "up", "--dir", dir, "--loopback", localenv.RandomLoopback(), "--cluster", example, "--node-wait", "45m")
	images, err := localenv.ImagesFromEnv()
	if err != nil || images.Runner == "" {
		t.Fatalf("no runner image (make images builds it): %v", err)
	}
	discover := []string{"scenarios", "run", "--kubeconfig", filepath.Join(dir, "cluster", "kubeconfig"), "--namespace", "directory", "--node", "directory",
		"--inventory", filepath.Join(dir, "cluster-inventory.yaml"), "--probe-image", images.Runner, example}
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "cluster up: podroles "+strings.Join(discover, " ")) {
		t.Fatalf("env up --cluster: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	other := t.TempDir()
	if r := run(t, "env", "up", "--dir", other, "--loopback", localenv.RandomLoopback(), "--cluster", example); r.Code != cli.ExitCantRun ||
		!strings.Contains(r.ErrOut, "the machine's node is in use") || !strings.Contains(r.ErrOut, "podroles env down --dir "+dir) {
		t.Errorf("a second node: exit %d\n%s", r.Code, r.ErrOut)
	}
	// The suites that need no waiting (scenarios' TestRealNode/PassEverySuite
	// runs them all).
	r = run(t, append(discover, "--suite", "deployments,units,ldap,postgres,secrets,authelia")...)
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "node directory: 24 passed, 0 failed, 0 skipped") {
		t.Errorf("scenarios run on the cluster: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	if r := run(t, "env", "down", "--dir", dir); r.Code != cli.ExitOK {
		t.Fatalf("env down: exit %d\n%s", r.Code, r.ErrOut)
	}
	r = run(t, append(discover, "--suite", "deployments")...)
	if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "does not answer") {
		t.Errorf("after env down the API server still answers: exit %d\n%s", r.Code, r.ErrOut)
	}
}

// The run functions take their options and streams, and need no cobra.
func TestRunWithoutCobra(t *testing.T) {
	var out, errOut bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	ctx := context.Background()
	dir := t.TempDir()
	if err := RunEnvUp(ctx, &EnvUpOptions{IO: io, Env: localenv.Options{Dir: dir}, Images: []string{"lldap=x"}}); err == nil || err.Error() != "--image is for --provider containers" {
		t.Errorf("env up --image without containers: %v", err)
	}
	if err := RunEnvUp(ctx, &EnvUpOptions{IO: io, Env: localenv.Options{Dir: dir}, Args: []string{"node.nix"}}); err == nil || !strings.Contains(err.Error(), "sources are for --cluster") {
		t.Errorf("env up with sources and no --cluster: %v", err)
	}
	if err := RunEnvDown(&EnvDownOptions{IO: io, Dir: dir}); err == nil || !strings.Contains(err.Error(), "no environment was started there") {
		t.Errorf("env down where nothing ran: %v", err)
	}
	inv := filepath.Join(dir, "inv.yaml")
	writeFacts(t, dir)
	os.WriteFile(inv, []byte("node: web\nfactsFile: facts.json\nroles:\n  r: {pods: [{name: p, address: 127.0.0.1}]}\n"), 0o644)
	err := RunScenarios(ctx, &ScenariosRunOptions{IO: io, Inventory: inv, SelectionOptions: SelectionOptions{Suites: []string{"ldap"}}, Format: "json", Parallel: 2, Timeout: time.Minute, Patience: time.Second, AllowSkip: true})
	if err != nil || !strings.Contains(out.String(), `"skipped"`) {
		t.Errorf("scenarios run on an inventory without ldap: %v\n%s", err, out.String())
	}
}

// TestGoldenScenariosReports: scenarios run's report in each format, on an
// inventory with nothing to run against (every suite of the registry says
// why it skips, and the run exits 1 since no scenario ran), is in
// testdata/scenarios; make docs rewrites it. The
// durations are replaced by name: the text's (…) after the spec items,
// json's "seconds" and junit's time.
func TestGoldenScenariosReports(t *testing.T) {
	volatile := []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`\] \([0-9.]+[a-zµ]+\)`), "] (DURATION)"},
		{regexp.MustCompile(`"seconds": [0-9.e+-]+`), `"seconds": 0`},
		{regexp.MustCompile(` time="[0-9.e+-]+"`), ` time="0"`},
	}
	for _, format := range report.Formats {
		t.Run(format, func(t *testing.T) {
			r := run(t, "scenarios", "run", "--inventory", "testdata/scenarios/inventory.yaml", "--format", format)
			if r.Code != cli.ExitFailed || !strings.Contains(r.ErrOut, "no scenario ran") {
				t.Fatalf("exit %d\n%s", r.Code, r.ErrOut)
			}
			out := r.Out
			for _, v := range volatile {
				out = v.re.ReplaceAllString(out, v.with)
			}
			golden.Check(t, filepath.Join("testdata", "scenarios", "skipped."+format), []byte(out))
		})
	}
}
