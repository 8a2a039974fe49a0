package nixeval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// requireNix returns the nix the tests run (PODROLES_TEST_NIX, see
// internal/nixtest).
func requireNix(t testing.TB) string {
	t.Helper()
	return nixtest.Nix(t)
}

// evaluator runs the nix the tests run.
func evaluator(t testing.TB) *Evaluator { return &Evaluator{Nix: requireNix(t)} }

// emptyNode is the least node: it sets the units of the node surface, to
// none (a file that sets nothing of the surface is no node).
const emptyNode = `{ systemd.services = { }; }`

// writeTree writes files under a new temporary directory and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readRepoFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fileSources writes files under a new temporary directory and returns the
// file sources of paths, in their order.
func fileSources(t testing.TB, files map[string]string, paths []string) []Source {
	t.Helper()
	dir := writeTree(t, files)
	var sources []Source
	for _, p := range paths {
		sources = append(sources, mustSources(t, FileSource, filepath.Join(dir, p))...)
	}
	return sources
}

func mustSources(t testing.TB, parse func(string) (Source, error), args ...string) []Source {
	t.Helper()
	var out []Source
	for _, a := range args {
		s, err := parse(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func extract(t *testing.T, ev *Evaluator, sources []Source) ([]*facts.Node, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return ev.Extract(ctx, sources)
}

func TestExtractFileShapes(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{
		"plain.nix":     `{ networking.hostName = "web1"; systemd.services.a = { }; }`,
		"system.nix":    `{ config = { systemd.services.b.enable = false; }; extendModules = _: throw "unused"; }`,
		"nohost.nix":    `{ networking.hostName = ""; systemd.services = { }; }`,
		"notattrs.nix":  `{ networking.hostName = 3; systemd.services = { }; }`,
		"sub/empty.nix": emptyNode,
	})
	var sources []Source
	for _, f := range []string{"plain.nix", "system.nix", "nohost.nix", "notattrs.nix", "sub/empty.nix"} {
		sources = append(sources, mustSources(t, FileSource, filepath.Join(dir, f))...)
	}
	nodes, err := extract(t, evaluator(t), sources)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if want := []string{"web1", "system", "nohost", "notattrs", "empty"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("names = %q, want %q", names, want)
	}
	if !nodes[0].Units["a"].Enable || nodes[1].Units["b"].Enable {
		t.Errorf("unit enable defaults wrong: %+v %+v", nodes[0].Units, nodes[1].Units)
	}
	// Defaults of node-surface.md for an empty config.
	e := nodes[4]
	if !e.Firewall.Enable || e.LLDAP.Host != "localhost" || e.Authelia.Host != "localhost" || e.K8sPod.Enable ||
		e.LLDAP.TLS.Enable || e.Authelia.SMTP || e.Authelia.Storage.Local != nil {
		t.Errorf("defaults of an empty config: %+v", e)
	}
}

// TestExtractForcesOnlyTheSurface proves that extraction never forces a
// unit's script, a package, a secret's value or a derivation.
func TestExtractForcesOnlyTheSurface(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{"lazy.nix": `{
		systemd.services.web = { script = throw "forced a script"; serviceConfig.ExecStart = throw "forced ExecStart"; };
		environment.systemPackages = throw "forced packages";
		system.build.toplevel = throw "forced the toplevel";
		system.services.lldap = { package = throw "forced a package"; };
		fediversity.podRoles.roles.r.secrets.s = {
			path = "secret/data/r/s";
			template = "{{ .Data.x }}";
			parameters = { ttl = "1h"; pkg = { type = "derivation"; outPath = throw "forced a derivation"; drvPath = throw "instantiated a derivation"; }; f = x: x; };
		};
		# FR-002: values that are no data, which must be neither copied
		# (the file does not exist) nor built (the builder fails).
		fediversity.podRoles.roles.r.secrets.t = { path = ./no-such-secret-file; field = "v"; };
		fediversity.podRoles.roles.r.ports = [ { port = 443; protocol = p: p; } ];
		fediversity.podRoles.services.lldap.companion = "${derivation { name = "podroles-never-built"; builder = "/bin/false"; system = builtins.currentSystem; }}/bin/companion";
		fediversity.podRoles.services.lldap.environment.TOKEN = "t";
		fediversity.authelia.smtp.password = throw "forced the smtp password";
		fediversity.authelia.storage.postgres.password = throw "forced the postgres password";
	}`})
	nodes, err := extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "lazy.nix")))
	if err != nil {
		t.Fatal(err)
	}
	s := nodes[0].PodRoles.Roles["r"].Secrets["s"]
	if s.Parameters["ttl"] != "1h" || s.Parameters["pkg"] != nil || s.Parameters["f"] != nil {
		t.Errorf("parameters = %v", s.Parameters)
	}
	if svc := nodes[0].PodRoles.Services["lldap"]; !reflect.DeepEqual(svc.Environment, []string{"TOKEN"}) || !reflect.DeepEqual(svc.Variables, map[string]string{"TOKEN": "t"}) {
		t.Errorf("environment = %q, variables = %q", svc.Environment, svc.Variables)
	}
	if !nodes[0].Authelia.SMTP || !nodes[0].Authelia.Storage.Postgres {
		t.Errorf("smtp and postgres should read as set: %+v", nodes[0].Authelia)
	}
	var notData []string
	for _, d := range nodes[0].NotData {
		notData = append(notData, d.Option()+" "+d.Kind)
	}
	want := []string{
		"fediversity.podRoles.roles.r.ports[0].protocol function",
		"fediversity.podRoles.roles.r.secrets.s.parameters.f function",
		"fediversity.podRoles.roles.r.secrets.s.parameters.pkg derivation",
		"fediversity.podRoles.roles.r.secrets.t.path path",
		"fediversity.podRoles.services.lldap.companion store path",
	}
	if !reflect.DeepEqual(notData, want) {
		t.Errorf("not data:\n got  %q\n want %q", notData, want)
	}
	t2 := nodes[0].PodRoles.Roles["r"].Secrets["t"]
	if !strings.HasSuffix(t2.Path, "/no-such-secret-file") || strings.HasPrefix(t2.Path, "/nix/store") {
		t.Errorf("a path literal is carried as its path, never copied: %q", t2.Path)
	}
	companion := *nodes[0].PodRoles.Services["lldap"].Companion
	if _, err := os.Stat(strings.TrimSuffix(companion, "/bin/companion")); err == nil {
		t.Errorf("the companion's derivation was built: %s", companion)
	}
}

// TestVariablesAreStrings proves that a variable of an image whose value is
// no string is named by its option, and that a derivation there is neither
// built nor instantiated to say so (FR-011: Kubernetes takes strings).
func TestVariablesAreStrings(t *testing.T) {
	requireNix(t)
	for value, want := range map[string]string{
		`{ type = "derivation"; outPath = throw "forced a derivation"; drvPath = throw "instantiated"; }`: "got a derivation",
		`x: x`:     "got a function",
		`./a-path`: "got a path",
		`8080`:     "got an integer",
	} {
		dir := writeTree(t, map[string]string{"node.nix": `{ fediversity.podRoles.services.lldap.environment.PORT = ` + value + `; }`})
		_, err := extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "node.nix")))
		if err == nil || !strings.Contains(err.Error(), "fediversity.podRoles.services.lldap.environment.PORT: want a string") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want the option named and %q", value, err, want)
		}
	}
}

// flakeTree is a flake with no inputs whose systems come from the
// nixos-lite stand-in for nixosSystem.
func flakeTree(t *testing.T, extra map[string]string) string {
	return writeTree(t, flakeFiles(t, extra))
}

// flakeFiles are the files of flakeTree.
func flakeFiles(t *testing.T, extra map[string]string) map[string]string {
	files := map[string]string{
		"nixos-lite.nix":  readRepoFile(t, "testdata/nixos-lite.nix"),
		"k8s-pod.nix":     readRepoFile(t, "testdata/k8s-pod.nix"),
		"mastodon-vm.nix": readRepoFile(t, "examples/mastodon-vm.nix"),
		"flake.nix": `{
		  outputs = { self }: let lite = import ./nixos-lite.nix; in {
		    nixosConfigurations = {
		      mastodon = lite.nixosSystem { modules = [ ./mastodon-vm.nix { networking.hostName = "ignored-for-flakes"; } ]; };
		      web = lite.nixosSystem { modules = [ { systemd.services.nginx = { }; } ]; };
		    } // (if builtins.pathExists ./broken.nix then import ./broken.nix lite else { });
		  };
		}`,
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func TestExtractFlake(t *testing.T) {
	requireNix(t)
	dir := flakeTree(t, nil)
	t.Run("all nodes", func(t *testing.T) {
		nodes, err := extract(t, evaluator(t), mustSources(t, FlakeSource, dir))
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 2 || nodes[0].Name != "mastodon" || nodes[1].Name != "web" {
			t.Fatalf("nodes = %+v", nodes)
		}
		if nodes[0].PodRoles.Roles["sidekiq"].Units[0] != "mastodon-sidekiq-all" || nodes[0].K8sPod.Enable {
			t.Errorf("mastodon = %+v", nodes[0].PodRoles)
		}
		if want := "flake:path:" + dir + "#mastodon"; nodes[0].Source != want {
			t.Errorf("source = %q, want %q", nodes[0].Source, want)
		}
	})
	t.Run("one node, both spellings", func(t *testing.T) {
		nodes, err := extract(t, evaluator(t), mustSources(t, FlakeSource, dir+"#web", "path:"+dir+"#nixosConfigurations.mastodon"))
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 2 || nodes[0].Name != "web" || nodes[1].Name != "mastodon" {
			t.Fatalf("nodes = %+v", nodes)
		}
	})
	t.Run("on k8s-pod.nix", func(t *testing.T) {
		ev := &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(dir, "k8s-pod.nix")}
		nodes, err := extract(t, ev, mustSources(t, FlakeSource, dir+"#mastodon"))
		if err != nil {
			t.Fatal(err)
		}
		if k := nodes[0].K8sPod; !k.Enable || !reflect.DeepEqual(k.PlatformUnits, []string{"nscd", "systemd-tmpfiles-resetup"}) {
			t.Errorf("k8sPod = %+v", k)
		}
	})
	t.Run("missing node", func(t *testing.T) {
		_, err := extract(t, evaluator(t), mustSources(t, FlakeSource, dir+"#nope"))
		var ee *EvalError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "has no nixosConfigurations.nope; it has: mastodon, web") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no flake.nix", func(t *testing.T) {
		if _, err := FlakeSource(t.TempDir() + "#x"); err == nil || !strings.Contains(err.Error(), "no flake.nix") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("?dir= of a folder without flake.nix", func(t *testing.T) {
		dir := writeTree(t, map[string]string{"deploy/flake.nix": `{ outputs = _: { }; }`})
		t.Chdir(dir)
		if _, err := FlakeSource(".?dir=deploy#x"); err == nil || !strings.Contains(err.Error(), "for the flake in deploy, write ./deploy") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestK8sPodModuleNeedsASystem(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{"plain.nix": emptyNode, "k8s-pod.nix": `{ }`})
	ev := &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(dir, "k8s-pod.nix")}
	_, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "plain.nix")))
	if err == nil || !strings.Contains(err.Error(), "needs a NixOS system with extendModules") {
		t.Fatalf("err = %v", err)
	}
	ev.K8sPodModule = filepath.Join(dir, "missing.nix")
	if _, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "plain.nix"))); err == nil || !strings.Contains(err.Error(), "missing.nix: no such file") {
		t.Fatalf("err = %v", err)
	}
	// A folder is a module through its default.nix, as nix imports it; a
	// folder without one is refused by name before nix runs.
	ev.K8sPodModule = dir
	if _, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "plain.nix"))); err == nil || !strings.Contains(err.Error(), "k8s-pod module "+dir+": a folder without default.nix") {
		t.Fatalf("err = %v", err)
	}
}

// countingNix is a nix that logs each call, its pid and whether it only
// asked for the version, then runs the real one in its place.
func countingNix(t *testing.T) (nix, log string) {
	real := requireNix(t)
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	nix = filepath.Join(dir, "nix")
	script := "#!/bin/sh\necho $$ \"$1\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(nix, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return nix, log
}

// call is one run of the counting nix.
type call struct {
	pid     int
	version bool // nix --version
}

func calls(t *testing.T, log string) []call {
	b, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []call
	for _, line := range strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' }) {
		pid, arg, _ := strings.Cut(line, " ")
		n, _ := strconv.Atoi(pid)
		out = append(out, call{pid: n, version: arg == "--version"})
	}
	return out
}

// evaluations counts the calls that evaluated, and those that read the
// version.
func evaluations(t *testing.T, log string) (evals, versions int) {
	for _, c := range calls(t, log) {
		if c.version {
			versions++
		} else {
			evals++
		}
	}
	return evals, versions
}

func TestEvalErrorNamesTheNode(t *testing.T) {
	requireNix(t)
	dir := flakeTree(t, map[string]string{"broken.nix": `lite: { zz-broken = lite.nixosSystem { modules = [ { systemd.services = throw "zz is broken"; } ]; }; }`})
	_, err := extract(t, evaluator(t), mustSources(t, FlakeSource, dir))
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Node != "zz-broken" || !strings.Contains(err.Error(), "eval node zz-broken (flake "+dir+"): zz is broken") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(ee.Detail, "while evaluating") {
		t.Errorf("--show-trace gave no trace:\n%s", ee.Detail)
	}
	if strings.Contains(ee.Detail, evalMark) {
		t.Errorf("the trace shows podroles' own markers:\n%s", ee.Detail)
	}
}

// slowNode is a node that nix never finishes: it reads a named pipe that
// nobody writes, and waits without CPU or memory. (A node that computes
// for minutes grew nix by gigabytes within seconds.) It reads another pipe
// first, which awaitReached ends at once, to tell a test that nix is in
// the node.
func slowNode(t *testing.T) []Source {
	dir := writeTree(t, map[string]string{"slow.nix": `{ systemd.services = builtins.seq (builtins.readFile ./reached) (builtins.fromJSON (builtins.readFile ./never-written)); }`})
	for _, pipe := range []string{"reached", "never-written"} {
		if err := syscall.Mkfifo(filepath.Join(dir, pipe), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return mustSources(t, FileSource, filepath.Join(dir, "slow.nix"))
}

// awaitReached reports whether nix reached slowNode's node before ctx
// ended: whether it opened the first pipe, which is then closed so that
// nix reads it empty and goes on to wait on the second.
func awaitReached(ctx context.Context, node []Source) bool {
	pipe := filepath.Join(filepath.Dir(node[0].Path), "reached")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		// Opening for writing without blocking fails until a reader has it.
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// requireNixGone fails when a nix that the counting wrapper started still
// runs, and kills it.
func requireNixGone(t *testing.T, log, after string) {
	for _, c := range calls(t, log) {
		if syscall.Kill(c.pid, 0) == nil {
			t.Errorf("nix (pid %d) still runs after %s", c.pid, after)
			syscall.Kill(c.pid, syscall.SIGKILL)
		}
	}
}

// TestDerivationInAPathOption proves that a derivation where a path is
// expected reads as a store path, never forced.
func TestDerivationInAPathOption(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"drv.nix": `{ fediversity.lldap.tls.caFile = { type = "derivation"; outPath = throw "forced"; meta = throw "forced meta"; };
		             fediversity.podRoles.services.s.companion = { type = "derivation"; outPath = throw "forced"; }; }`,
	})
	nodes, err := extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "drv.nix")))
	if err != nil {
		t.Fatalf("a derivation in a path option is forced: %v", err)
	}
	if ca := nodes[0].LLDAP.TLS.CAFile; ca == nil || *ca != "/nix/store/<derivation>" {
		t.Errorf("caFile = %v", ca)
	}
}

func TestManyFilesInOneRequest(t *testing.T) {
	requireNix(t)
	files := map[string]string{}
	var paths []string
	for i := range 600 {
		name := fmt.Sprintf("a-rather-long-file-name-for-a-node-of-this-platform-%04d.nix", i)
		files[name] = emptyNode
		paths = append(paths, name)
	}
	nodes, err := extract(t, evaluator(t), fileSources(t, files, paths))
	if err != nil || len(nodes) != 600 || !nodes[0].NamedAfterFile {
		t.Fatalf("%d nodes, err %v", len(nodes), err)
	}
}

// TestK8sPodModuleAddsUnits: the units that only the k8s-pod module makes
// (by its condition on every listed name) are named, on the nixos-lite
// stand-in (by evaluating the node without the module too) as on the
// module system (from the definitions' files, see testdata/modules).
func TestK8sPodModuleAddsUnits(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{
		"nixos-lite.nix": readRepoFile(t, "testdata/nixos-lite.nix"),
		"node.nix": `(import ./nixos-lite.nix).nixosSystem { modules = [ {
		  systemd.services.web = { };
		  fediversity.podRoles.mainUnits = [ "web" "wbe" ];
		} ]; }`,
		"k8s-pod.nix": `{ config, ... }: {
		  fediversity.k8sPod.enable = true;
		  systemd.services = builtins.listToAttrs (map (name: { inherit name; value = { unitConfig.ConditionPathExists = "/run/units/${name}"; }; })
		    config.fediversity.podRoles.mainUnits);
		}`,
	})
	ev := &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(dir, "k8s-pod.nix")}
	nodes, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "node.nix")))
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if _, ok := n.Units["wbe"]; !ok || !reflect.DeepEqual(n.K8sPod.AddedUnits, []string{"wbe"}) {
		t.Errorf("units %v, added %v: want wbe made by the module and named so", n.Units, n.K8sPod.AddedUnits)
	}
	if n.ListsProbe != nil {
		t.Errorf("nixos-lite is no module system, yet it was probed: %+v", n.ListsProbe)
	}
	// Without the module nothing is added, and nothing is said.
	nodes, err = extract(t, evaluator(t), mustSources(t, FileSource, filepath.Join(dir, "node.nix")))
	if err != nil || nodes[0].K8sPod.AddedUnits != nil {
		t.Errorf("without a module: %v, %v", err, nodes[0].K8sPod.AddedUnits)
	}
}

// TestModuleSystemForcesOnlyTheSurface: on a node of the real module system,
// on k8s-pod.nix, the FR-007 probe and the naming of the units the module
// made force no unit's body, no package and no derivation. (The module
// system itself forces the head of each value of an attrsOf to know its
// names, e.g. of a service's environment: that is the option type's doing,
// and TestExtractForcesOnlyTheSurface proves podroles' projection lazy.)
func TestModuleSystemForcesOnlyTheSurface(t *testing.T) {
	requireNix(t)
	fixture.NixpkgsLib(t)
	modules := filepath.Join(fixture.RepoRoot(t), "testdata", "modules")
	dir := writeTree(t, map[string]string{"lazy.nix": `(import ` + modules + `/nixos { }).nixosSystem { modules = [ ` + modules + `/hosts/directory ({ lib, ... }: {
		systemd.services.nginx = { script = throw "forced a script"; serviceConfig.ExecStart = throw "forced ExecStart"; path = throw "forced a path"; environment = throw "forced the environment"; };
		systemd.services.lldap-publish-roles.preStart = throw "forced preStart";
		system.services.lldap.process.argv = lib.mkForce (throw "forced a modular service's command");
		fediversity.podRoles.roles.authelia.secrets."tls.pem".parameters.csr = { type = "derivation"; outPath = throw "forced a derivation"; drvPath = throw "instantiated a derivation"; };
		fediversity.authelia.smtp.password = throw "forced the smtp password";
	}) ]; }`})
	ev := &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(modules, "k8s-pod.nix")}
	nodes, err := extract(t, ev, mustSources(t, FileSource, filepath.Join(dir, "lazy.nix")))
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if n.ListsProbe == nil || n.ListsProbe.Failed() || len(n.K8sPod.AddedUnits) != 0 {
		t.Errorf("probe %+v, added units %q", n.ListsProbe, n.K8sPod.AddedUnits)
	}
	if len(n.NotData) != 1 || n.NotData[0].Kind != "derivation" {
		t.Errorf("not data = %+v", n.NotData)
	}
}

// TestLoadKeepsTheNodesThatEvaluate: a node that nix fails on, and a flake
// whose nodes nix cannot list, are each a NodeError beside the nodes that
// evaluate; a stopped evaluation, which may leave nodes out, is not.
func TestLoadKeepsTheNodesThatEvaluate(t *testing.T) {
	requireNix(t)
	dir := writeTree(t, map[string]string{
		"good.nix":            `{ networking.hostName = "good"; systemd.services.a = { }; }`,
		"bad.nix":             "{\n  networking.hostName = \"bad\";\n  systemd.services.a = { ;\n}\n",
		"named.nix":           `{ networking.hostName = "named"; systemd.services = throw "named breaks"; }`,
		"noconfigs/flake.nix": `{ outputs = { self }: { }; }`,
	})
	sources := append(mustSources(t, FileSource, filepath.Join(dir, "good.nix"), filepath.Join(dir, "bad.nix"), filepath.Join(dir, "named.nix")),
		mustSources(t, FlakeSource, "path:"+filepath.Join(dir, "noconfigs"))...)
	nodes, total, err := evaluator(t).LoadShard(t.Context(), sources)
	if len(nodes) != 1 || nodes[0].Name != "good" || total != 3 {
		t.Fatalf("%d nodes of %d, want good of 3; %v", len(nodes), total, err)
	}
	failed, ok := NodeErrors(err)
	if !ok || len(failed) != 3 {
		t.Fatalf("NodeErrors: %d, %v: %v", len(failed), ok, err)
	}
	var got []string
	for _, ne := range failed {
		loc := ""
		if l := ne.Location(); l != nil {
			loc = fmt.Sprintf("%s:%d", l.File, l.Line)
		}
		got = append(got, strings.Join([]string{ne.Node, ne.Source, loc, ne.Reason()}, "|"))
	}
	// The flakes that nix could not list come first, then the nodes.
	want := []string{
		"|flake:" + sources[3].Ref + "|" + filepath.Join(dir, "noconfigs", "flake.nix") + ":0|flake " + sources[3].Display + " has no nixosConfigurations",
		"bad|file:" + sources[1].Display + "|" + sources[1].Path + ":3|syntax error, unexpected ';'",
		"named|file:" + sources[2].Display + "|" + sources[2].Path + ":1|named breaks",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("node errors\n got  %q\n want %q", got, want)
	}

	// Stopped by the timeout before the second node: an error of the
	// whole evaluation, without nodes.
	slow := append(slowNode(t), sources[0])
	nodes, _, err = (&Evaluator{Nix: requireNix(t), Jobs: 1, Timeout: 500 * time.Millisecond}).LoadShard(t.Context(), slow)
	if _, ok := NodeErrors(err); ok || err == nil || nodes != nil {
		t.Errorf("a stopped evaluation: %d nodes, %v", len(nodes), err)
	}
}
