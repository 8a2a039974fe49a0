// Package flaketest proves flake.nix with the real nix on a machine that has
// no nixpkgs: the plain Nix files it wires together (extraction, the facts
// document, the check script, the node module) are evaluated and run for
// real, and flake.nix's outputs are evaluated against the smallest stand-in
// for nixpkgs (testdata/nixpkgs-stub.nix), to prove which command each check
// runs and on which file.
package flaketest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/report"
)

var repoRoot = func() string {
	abs, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	return abs
}()

// binDir holds bin/podroles and bin/podroles-check, built once for all
// the tests by TestMain: the stand-in's packages, both of them.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podroles-flaketest-")
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"podroles", "podroles-check"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", name), "./cmd/"+name)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			panic(fmt.Sprintf("go build %s: %v\n%s", name, err, out))
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildPodroles returns the folder of bin/podroles and bin/podroles-check,
// as the packages would have them.
func buildPodroles(t *testing.T) string { return binDir }

// nixEval evaluates expr, in which REPO is the repository's path, with the
// flake's outputs bound to `self` on the nixpkgs stand-in.
func nixEval(t *testing.T, binDir, expr string, out any) {
	t.Helper()
	nix := nixtest.Nix(t)
	full := `let
	  repo = /. + builtins.getEnv "PODROLES_REPO";
	  nixpkgs = import (repo + "/flaketest/testdata/nixpkgs-stub.nix");
	  self = (import (repo + "/flake.nix")).outputs { inherit self nixpkgs; } // { outPath = repo; shortRev = "abc1234"; };
	  pkgs = nixpkgs.legacyPackages.x86_64-linux;
	  lite = import (repo + "/testdata/nixos-lite.nix");
	in ` + expr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nix, "--extra-experimental-features", "nix-command flakes", "eval", "--json", "--impure", "--expr", full)
	cmd.Env = append(os.Environ(), "PODROLES_REPO="+repoRoot, "PODROLES_TEST_BIN_DIR="+binDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	if err != nil {
		t.Fatalf("nix eval: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("nix eval printed %s: %v", data, err)
	}
}

// runScript runs a build script as the builder would, with $out in a new
// folder, and returns its exit status, output and the folder.
func runScript(t *testing.T, script string) (status int, output, out string) {
	t.Helper()
	out = filepath.Join(t.TempDir(), "out")
	// The sandbox has no nix, but Debian's is in /usr/bin: a nix first on
	// PATH that refuses to run stands in for its absence.
	noNix := t.TempDir()
	if err := os.WriteFile(filepath.Join(noNix, "nix"), []byte("#!/bin/sh\necho 'the build ran nix, which the sandbox does not have' >&2\nexit 127\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", inStoreOf(nixtest.Nix(t), script))
	cmd.Env = append(os.Environ(), "out="+out, "PATH="+noNix+":/usr/bin:/bin")
	b, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode(), string(b), out
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(b), out
}

// inStoreOf gives a script's paths of the store where nix wrote them. A
// nix with a root of its own (scripts/nix-own-root.sh: DIR/own-root/nix
// bound over /nix in its mount namespace) writes the files of
// builtins.toFile to DIR/own-root/nix/store, which the script, run outside
// that namespace, finds there.
func inStoreOf(nix, script string) string {
	root, ok := strings.CutSuffix(nix, "/own-root/bin/nix")
	if !ok {
		return script
	}
	return strings.ReplaceAll(script, "/nix/store/", root+"/own-root/nix/store/")
}

func examplePath(name string) string { return filepath.Join(repoRoot, "examples", name) }

// podrolesFacts is what `podroles facts` gives for files, with each source
// set to "" so that documents from different places compare.
func podrolesFacts(t *testing.T, files ...string) []*facts.Node {
	t.Helper()
	var sources []nixeval.Source
	for _, f := range files {
		s, err := nixeval.FileSource(f)
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, s)
	}
	nodes, err := (&nixeval.Evaluator{Nix: nixtest.Nix(t)}).Load(context.Background(), sources)
	if err != nil {
		t.Fatal(err)
	}
	return withoutSources(nodes)
}

func withoutSources(nodes []*facts.Node) []*facts.Node {
	for _, n := range nodes {
		n.Source = ""
	}
	return nodes
}

func readFactsFile(t *testing.T, path string) []*facts.Node {
	t.Helper()
	doc, err := facts.ReadFile(path)
	if err != nil {
		t.Fatalf("facts %s: %v", path, err)
	}
	return withoutSources(doc.Nodes)
}

func TestExamplesCheck(t *testing.T) {
	bin := buildPodroles(t)
	var got struct {
		Examples, Broken string
	}
	nixEval(t, bin, `{
	  examples = self.checks.x86_64-linux.examples.buildCommand;
	  broken = self.checks.x86_64-linux.broken-example-refused.buildCommand;
	}`, &got)

	// The checks run the checker binary, podroles-check.
	if !strings.Contains(got.Examples, bin+"/bin/podroles-check check --facts /nix/store/") ||
		!strings.Contains(got.Examples, "--format junit --output \"$out/junit.xml\"") {
		t.Fatalf("the examples check runs:\n%s", got.Examples)
	}
	status, output, out := runScript(t, got.Examples)
	if status != 0 || !strings.Contains(output, "3 nodes checked: 0 errors, 0 warnings: passed") {
		t.Fatalf("examples check: exit %d\n%s", status, output)
	}
	// The facts it wrote are those podroles facts gives for the same files,
	// with the definitions a finding would ask about: the build has no nix.
	want := podrolesFacts(t, examplePath("mastodon.nix"), examplePath("directory.nix"), examplePath("mastodon-vm.nix"))
	written := readFactsFile(t, filepath.Join(out, "facts.json"))
	for _, n := range written {
		if len(n.Definitions) == 0 {
			t.Errorf("lib.mkCheck's facts of %s carry no definitions", n.Name)
		}
		n.Definitions = nil
	}
	if !reflect.DeepEqual(written, want) {
		a, _ := json.Marshal(written)
		b, _ := json.Marshal(want)
		t.Errorf("lib.mkCheck's facts differ from podroles facts:\n%s\n%s", a, b)
	}
	var report report.Suites
	data, _ := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err := xml.Unmarshal(data, &report); err != nil || len(report.Suites) != 3 || report.Failures != 0 {
		t.Errorf("junit.xml: %v, %d suites, %d failures", err, len(report.Suites), report.Failures)
	}

	status, output, _ = runScript(t, got.Broken)
	if status != 0 || !strings.Contains(output, "PR101 unit mastodon-sidekiq-all") {
		t.Errorf("the broken example must be refused, and the check pass: exit %d\n%s", status, output)
	}
}

func TestMkCheck(t *testing.T) {
	bin := buildPodroles(t)
	var got struct{ Broken, Strict, Lenient string }
	nixEval(t, bin, `let
	  shared-init = { systemd.services = { app-init = { }; web = { }; }; fediversity.k8sPod.enable = true;
	                  fediversity.podRoles = { mainUnits = [ "web" ]; sharedUnits = [ "app-init" ]; }; };
	in {
	  broken = (self.lib.mkCheck { inherit pkgs; nodes.mastodon = import (repo + "/examples/broken/mastodon-renamed.nix"); }).buildCommand;
	  strict = (self.lib.mkCheck { inherit pkgs; nodes.app = shared-init; strict = true; }).buildCommand;
	  lenient = (self.lib.mkCheck { inherit pkgs; nodes.app = shared-init; }).buildCommand;
	}`, &got)
	if status, output, out := runScript(t, got.Broken); status != 1 || !strings.Contains(output, "did you mean mastodon-sidekiq-default?") {
		t.Errorf("a broken node fails the build: exit %d\n%s", status, output)
	} else if _, err := os.Stat(filepath.Join(out, "junit.xml")); err != nil {
		t.Errorf("the JUnit report is not in the output: %v", err)
	}
	if status, output, _ := runScript(t, got.Strict); status != 1 || !strings.Contains(output, "PR104") {
		t.Errorf("strict: a warning fails the build: exit %d\n%s", status, output)
	}
	if status, output, _ := runScript(t, got.Lenient); status != 0 {
		t.Errorf("not strict: a warning passes: exit %d\n%s", status, output)
	}
}

// TestMkCheckNodeNixCannotEvaluate: a node that throws is reported beside
// the others, named, and fails the build; a node that aborts stops nix,
// whose message names it.
func TestMkCheckNodeNixCannotEvaluate(t *testing.T) {
	bin := buildPodroles(t)
	var script string
	nixEval(t, bin, `(self.lib.mkCheck { inherit pkgs; nodes = {
	  mastodon = import (repo + "/examples/broken/mastodon-renamed.nix");
	  undecided = throw "not decided";
	  replicas = { systemd.services.web = { }; fediversity.k8sPod.enable = true;
	    fediversity.podRoles = { mainUnits = [ "web" ]; roles.web = { units = [ "web" ]; replicas = assert false; 2; }; }; };
	}; }).buildCommand`, &script)
	status, output, out := runScript(t, script)
	for _, want := range []string{"did you mean mastodon-sidekiq-default?", "undecided", "replicas", "nix could not evaluate the node (a throw or a failed assert"} {
		if !strings.Contains(output, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if status != 2 {
		t.Errorf("nodes nix could not evaluate fail the build with exit 2, not %d", status)
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil || !strings.Contains(string(junit), "undecided") {
		t.Errorf("the JUnit report does not name the node: %v\n%s", err, junit)
	}
	if t.Failed() {
		t.Logf("exit %d\n%s", status, output)
	}

	// An abort is no error that tryEval catches: nix stops, naming the
	// node (nix 2.8 shows the trace only with --show-trace).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nixtest.Nix(t), "--extra-experimental-features", "nix-command", "eval", "--impure", "--expr",
		`let repo = /. + builtins.getEnv "PODROLES_REPO"; in builtins.readFile (import (repo + "/nix/facts-file.nix") { nodes = { ok = { }; aborts = abort "not decided"; }; })`)
	cmd.Env = append(os.Environ(), "PODROLES_REPO="+repoRoot)
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "not decided") {
		t.Fatalf("an abort must stop nix: %v\n%s", err, b)
	}
	namesNode := nixtest.Pick(t, map[string]bool{"2.8": false, "2.24 2.26 2.31": true})
	if namesNode && !strings.Contains(string(b), "while reading the facts of node aborts for podroles") {
		t.Errorf("nix's error does not name the node:\n%s", b)
	}
}

// TestCommandAndMkCheckAgree checks the same systems with podroles check
// --flake and with lib.mkCheck, on k8s-pod.nix: finding for finding.
func TestCommandAndMkCheckAgree(t *testing.T) {
	bin := buildPodroles(t)
	dir := t.TempDir()
	copyFile := func(from, to string) {
		b, err := os.ReadFile(filepath.Join(repoRoot, from))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755)
		os.WriteFile(filepath.Join(dir, to), b, 0o644)
	}
	copyFile("testdata/nixos-lite.nix", "nixos-lite.nix")
	copyFile("testdata/k8s-pod.nix", "k8s-pod.nix")
	copyFile("examples/mastodon-vm.nix", "mastodon-vm.nix")
	copyFile("examples/mastodon.nix", "mastodon.nix")
	copyFile("examples/broken/mastodon-renamed.nix", "broken/mastodon-renamed.nix")
	os.WriteFile(filepath.Join(dir, "systems.nix"), []byte(`let lite = import ./nixos-lite.nix; in {
	  vm = lite.nixosSystem { modules = [ ./mastodon-vm.nix ]; };
	  renamed = lite.nixosSystem { modules = [ ./broken/mastodon-renamed.nix ]; };
	}`), 0o644)
	os.WriteFile(filepath.Join(dir, "flake.nix"), []byte(`{ outputs = { self }: { nixosConfigurations = import ./systems.nix; }; }`), 0o644)

	var script string
	nixEval(t, bin, `(self.lib.mkCheck { inherit pkgs; nodes = import `+dir+`/systems.nix; k8sPodModule = `+dir+`/k8s-pod.nix; }).buildCommand`, &script)
	_, _, out := runScript(t, script)

	cmd := exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--nix", nixtest.Nix(t), "--format", "json", "--flake", dir, "--k8s-pod-module", filepath.Join(dir, "k8s-pod.nix"))
	direct, _ := cmd.Output()
	cmd = exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--format", "json", "--facts", filepath.Join(out, "facts.json"))
	viaFacts, _ := cmd.Output()

	findings := func(data []byte) []checks.Finding {
		var r checks.Report
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		var all []checks.Finding
		for _, n := range r.Nodes {
			all = append(all, n.Findings...)
		}
		return all
	}
	a, b := findings(direct), findings(viaFacts)
	// The command evaluates the flake itself and locates each finding in
	// the flake's folder (not in nix's store copy of it). A check of facts
	// has no nix to ask: the facts carry the definitions that its findings
	// ask about, read when lib.mkCheck evaluated the same files, and they
	// place each finding and its notes where the command does.
	for i, f := range a {
		if f.Location == nil || !strings.HasPrefix(f.Location.File, dir+"/") {
			t.Errorf("finding %s %s is located at %v, not in the flake's folder", f.Rule, f.Subject, f.Location)
		}
		if i < len(b) && (!reflect.DeepEqual(b[i].Location, f.Location) || !reflect.DeepEqual(b[i].Notes, f.Notes)) {
			t.Errorf("finding %s %s: lib.mkCheck locates it at %v %+v, podroles check at %v %+v", f.Rule, f.Subject, b[i].Location, b[i].Notes, f.Location, f.Notes)
		}
		a[i].Location, a[i].Notes = nil, nil
	}
	for i := range b {
		b[i].Location, b[i].Notes = nil, nil
	}
	if len(a) == 0 || !reflect.DeepEqual(a, b) {
		t.Errorf("podroles check --flake and lib.mkCheck disagree:\n%+v\n%+v", a, b)
	}
	// On k8s-pod.nix the vm node is checked as a k8s node too.
	if !strings.Contains(string(viaFacts), `"node": "vm"`) || !strings.Contains(string(viaFacts), `"k8sPod": true`) {
		t.Errorf("the k8s-pod module was not applied:\n%s", viaFacts)
	}
}

func TestFlakeOutputs(t *testing.T) {
	bin := buildPodroles(t)
	var got struct {
		Package struct {
			Pname, Version, VendorHash string
			SubPackages, Ldflags       []string
		}
		Checker struct {
			Pname, VendorHash string
			SubPackages       []string
		}
		App   string
		Image struct {
			Name, Tag, Builder string
			Contents           []string
			Config             struct {
				Entrypoint []string
				User       string
			}
		}
		Shell     []string
		Tests     struct{ DoCheck bool }
		LibFacts  json.RawMessage
		Systems   []string
		CheckKeys []string
	}
	nixEval(t, bin, `{
	  package = { inherit (self.packages.x86_64-linux.default) pname version vendorHash subPackages ldflags; };
	  checker = { inherit (self.packages.x86_64-linux.podroles-check) pname vendorHash subPackages; };
	  app = self.apps.x86_64-linux.default.program;
	  image = let i = self.packages.x86_64-linux.podroles-image; in { inherit (i) name tag builder config; contents = map (c: c.pname or c.name) i.contents; };
	  shell = map (p: p.name) self.devShells.x86_64-linux.default.packages;
	  tests = { inherit (self.checks.x86_64-linux.tests) doCheck; };
	  libFacts = self.lib.facts (import (repo + "/examples/mastodon.nix"));
	  systems = builtins.attrNames self.packages;
	  checkKeys = builtins.attrNames self.checks.x86_64-linux;
	}`, &got)
	if got.Package.Pname != "podroles" || got.Package.Version != "abc1234" || !reflect.DeepEqual(got.Package.SubPackages, []string{"cmd/podroles"}) ||
		!strings.Contains(strings.Join(got.Package.Ldflags, " "), "-X main.version=abc1234") {
		t.Errorf("package = %+v", got.Package)
	}
	if got.Checker.Pname != "podroles-check" || !reflect.DeepEqual(got.Checker.SubPackages, []string{"cmd/podroles-check"}) || got.Checker.VendorHash != got.Package.VendorHash {
		t.Errorf("the checker's package = %+v", got.Checker)
	}
	if got.App != bin+"/bin/podroles" {
		t.Errorf("app = %q", got.App)
	}
	// The image has the entrypoint and user of make images' runner
	// (harness/images/runner/Dockerfile, TestRunnerImage runs that one).
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "harness/images/runner/Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if img := got.Image; img.Builder != "buildLayeredImage" || img.Name != "podroles" || img.Tag != "abc1234" ||
		!reflect.DeepEqual(img.Contents, []string{"podroles", "cacert"}) || !reflect.DeepEqual(img.Config.Entrypoint, []string{"/bin/podroles"}) || img.Config.User != "65532:65532" ||
		!strings.Contains(string(dockerfile), `ENTRYPOINT ["/bin/podroles"]`) || !strings.Contains(string(dockerfile), "USER "+img.Config.User) {
		t.Errorf("packages.podroles-image = %+v, unlike the Dockerfile of make images:\n%s", img, dockerfile)
	}
	for _, want := range []string{"go", "gopls", "nix", "openldap", "postgresql", "nginx", "haproxy", "openbao", "authelia", "etcd", "kubernetes", "kwok"} {
		if !strings.Contains(" "+strings.Join(got.Shell, " ")+" ", " "+want+" ") {
			t.Errorf("the dev shell lacks %s: %v", want, got.Shell)
		}
	}
	if !got.Tests.DoCheck {
		t.Error("checks.tests does not run the Go tests")
	}
	if !reflect.DeepEqual(got.CheckKeys, []string{"broken-example-refused", "examples", "tests"}) {
		t.Errorf("checks = %v", got.CheckKeys)
	}
	if len(got.Systems) != 4 {
		t.Errorf("systems = %v", got.Systems)
	}
	// lib.facts is the extraction of the binary: it gives the node podroles
	// facts gives, less name and source.
	want := podrolesFacts(t, examplePath("mastodon.nix"))[0]
	doc := []byte(`{"version": 1, "nodes": [` + strings.TrimSuffix(string(got.LibFacts), "}") + `, "name": "mastodon"}]}`)
	parsed, err := facts.ParseDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed.Nodes[0], want) {
		t.Errorf("lib.facts differs from the binary's extraction:\n%s", got.LibFacts)
	}
	// vendorHash is the hash of `go mod vendor` for this go.mod, as
	// buildGoModule computes it.
	vendor := filepath.Join(t.TempDir(), "vendor")
	cmd := exec.Command("go", "mod", "vendor", "-o", vendor)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod vendor: %v\n%s", err, out)
	}
	hash, err := exec.Command(nixtest.Nix(t), "--extra-experimental-features", "nix-command", "hash", "path", vendor).Output()
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.TrimSpace(string(hash)); h != got.Package.VendorHash {
		t.Errorf("nix/package.nix has vendorHash %s, but go.mod vendors to %s: update it", got.Package.VendorHash, h)
	}
}

// TestMkCheckAgreesOnModuleSystemHosts checks the platform repository's
// flake of the module-system fixtures (a git work tree; hosts through
// nixpkgs' own lib, one of them importing k8s-pod.nix itself) with podroles
// check --flake --k8s-pod-module and with lib.mkCheck's k8sPodModule: the
// same facts, finding for finding.
func TestMkCheckAgreesOnModuleSystemHosts(t *testing.T) {
	bin := buildPodroles(t)
	work := fixture.HostsFlake(t)
	ref := "git+file://" + work.Dir + "?dir=deploy"

	var script string
	nixEval(t, bin, `let flake = builtins.getFlake "`+ref+`"; in
	  (self.lib.mkCheck { inherit pkgs; nodes = flake.nixosConfigurations; k8sPodModule = flake.k8sPodModule; }).buildCommand`, &script)
	status, output, out := runScript(t, script)
	if status != 1 || !strings.Contains(output, "PR101 unit mastodon-cleanup") {
		t.Fatalf("lib.mkCheck: exit %d\n%s", status, output)
	}
	viaFacts, _ := exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--format", "json", "--facts", filepath.Join(out, "facts.json")).Output()
	direct, _ := exec.Command(filepath.Join(bin, "bin", "podroles"), "check", "--nix", nixtest.Nix(t), "--format", "json",
		"--flake", filepath.Join(work.Dir, "deploy"), "--k8s-pod-module", filepath.Join(work.Dir, "k8s-pod.nix")).Output()

	findings := func(data []byte) []string {
		var r checks.Report
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%v\n%s", err, data)
		}
		var all []string
		for _, n := range r.Nodes {
			for _, f := range n.Findings {
				all = append(all, n.Node+" "+f.Rule+" "+f.Subject.String()+": "+f.Message)
			}
		}
		return all
	}
	a, b := findings(direct), findings(viaFacts)
	if len(a) != 2 || !reflect.DeepEqual(a, b) {
		t.Errorf("podroles check --flake and lib.mkCheck disagree:\n%q\n%q", a, b)
	}
	// The node that imports k8s-pod.nix itself has it once, either way.
	doc, err := facts.ReadFile(filepath.Join(out, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range doc.Nodes {
		if n.Name == "mastodon-on-k8s" && (len(n.K8sPod.PlatformUnits) != 2 || !reflect.DeepEqual(n.K8sPod.AddedUnits, []string{"mastodon-cleanup"})) {
			t.Errorf("mastodon-on-k8s: platform units %q, added %q", n.K8sPod.PlatformUnits, n.K8sPod.AddedUnits)
		}
	}
}
