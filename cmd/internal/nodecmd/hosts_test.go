package nodecmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// The command on hosts written as real ones are (testdata/modules, through
// nixpkgs' own module system): exact findings, node names and exit codes.

// modules is the absolute path of a file of testdata/modules, which Nix
// text written elsewhere can import.
func modules(path string) string {
	abs, err := filepath.Abs(repo(filepath.Join("testdata", "modules", path)))
	if err != nil {
		panic(err)
	}
	return abs
}

func TestCheckHostsOnK8sPod(t *testing.T) {
	fixture.NixpkgsLib(t)
	k8sPod := modules("k8s-pod.nix")
	r := run(t, "check", "--k8s-pod-module", k8sPod, modules("nodes/mastodon.nix"), modules("nodes/directory.nix"))
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "2 nodes checked: 0 errors, 0 warnings: passed") {
		t.Errorf("the good hosts on k8s-pod.nix: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	r = run(t, "check", "--k8s-pod-module", k8sPod, modules("nodes/directory-ldap-backups.nix"), modules("nodes/mastodon-sidekik-all.nix"))
	if r.Code != cli.ExitFailed {
		t.Fatalf("a misspelled unit passes on k8s-pod.nix: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	// Each finding is a line in the style of compilers, at the definition
	// that is wrong (these files are outside the working directory, so
	// their paths are absolute).
	for _, want := range []string{
		modules("hosts/directory/backups.nix") + ":4:3: error PR101 unit ldap-backups [FR-008, US2-1]: mainUnits lists unit ldap-backups, which is no unit of the node",
		modules("nodes/mastodon-sidekik-all.nix") + ":12:7: error PR101 unit mastodon-sidekik-all [FR-008, US2-1]: role sidekiq lists unit mastodon-sidekik-all",
		"did you mean mastodon-sidekiq-all? Fix the name in fediversity.podRoles.roles.sidekiq.units",
		modules("hosts/mastodon/pod-roles.nix") + ":12:9: note: fediversity.podRoles.roles.sidekiq.units is also defined here with a plain definition (priority 100), which lost to mkForce (priority 50)\n",
		modules("hosts/mastodon/mastodon.nix") + ":25:5: error PR103 unit mastodon-sidekiq-all [FR-014, US1-17]: unit mastodon-sidekiq-all is enabled and in no list, and role sidekiq runs the image of the node, so the unit has no pod: the lists name mastodon-sidekik-all",
		"2 nodes checked: 3 errors, 0 warnings: failed",
	} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Out)
		}
	}
}

func TestCheckHostsAtNixOSDefaultHostName(t *testing.T) {
	fixture.NixpkgsLib(t)
	nixos := modules("nixos")
	dir := t.TempDir()
	for _, name := range []string{"web1.nix", "web2.nix"} {
		text := `(import ` + nixos + ` { }).nixosSystem { modules = [ { systemd.services.web = { }; fediversity.podRoles = { roles.web = { replicas = 2; units = [ "web" ]; }; }; } ]; }`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := run(t, "check", "--file", filepath.Join(dir, "web1.nix"), "--file", filepath.Join(dir, "web2.nix"))
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "web1 (file:") || !strings.Contains(r.Out, "web2 (file:") {
		t.Errorf("two hosts at hostName \"nixos\": exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

// TestCheckFlakeInGitWorkTree: the platform repository's flake in a git work
// tree, a fix only in an untracked file, then staged.
func TestCheckFlakeInGitWorkTree(t *testing.T) {
	work := fixture.HostsFlake(t)
	work.Write("site/mastodon/cleanup.nix", `{ systemd.services.mastodon-cleanup.script = "tootctl cache clear"; }`)
	flake := filepath.Join(work.Dir, "deploy") + "#mastodon"

	r := run(t, "check", "--format", "json", "--flake", flake)
	if r.Code != cli.ExitFailed {
		t.Fatalf("the fix is untracked, so nix does not see it, nor may podroles: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	var report struct {
		Nodes []struct {
			Node, Source string
			Findings     []struct {
				Rule    string
				Subject struct{ Kind, Name string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.Out), &report); err != nil {
		t.Fatal(err)
	}
	n := report.Nodes[0]
	if want := "flake:git+file://" + work.Dir + "?dir=deploy#mastodon"; n.Source != want {
		t.Errorf("the report says which reference was evaluated: %q, want %q", n.Source, want)
	}
	if len(n.Findings) != 1 || n.Findings[0].Rule != "PR101" || n.Findings[0].Subject.Name != "mastodon-cleanup" {
		t.Errorf("findings = %+v", n.Findings)
	}

	work.Add("site/mastodon/cleanup.nix")
	if r := run(t, "check", "--flake", flake); r.Code != cli.ExitOK {
		t.Errorf("staged, the fix is read: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

// TestCheckListsThatRecurse: a host that imports k8s-pod.nix itself and
// computes a list from config.systemd.services cannot be evaluated: nix
// stops with an infinite recursion, and the check cannot run (exit 2, one
// line), which names the list when --k8s-pod-module names the module the
// host imports, or none: the FR-007 probe disables the modules that put the
// node on k8s-pod.nix. Without k8s-pod.nix the probe names the list (exit 1).
func TestCheckListsThatRecurse(t *testing.T) {
	fixture.NixpkgsLib(t)
	dir := t.TempDir()
	node := func(extra string) string {
		return `(import ` + modules("nixos") + ` { }).nixosSystem { modules = [ ` + modules("hosts/mastodon") + ` ` + modules("hosts/mastodon/main-units-from-systemd.nix") + extra + ` ]; }`
	}
	os.WriteFile(filepath.Join(dir, "on-k8s.nix"), []byte(node(" "+modules("k8s-pod.nix"))), 0o644)
	os.WriteFile(filepath.Join(dir, "off-k8s.nix"), []byte(node("")), 0o644)

	// With and without --k8s-pod-module, the line names the list, and
	// where the host reads the units (nix 2.8's trace has no frame there:
	// its innermost position is k8s-pod.nix's).
	at := nixtest.Pick(t, map[string]string{
		"2.8":            "(at " + modules("k8s-pod.nix") + ":19:22)",
		"2.24 2.26 2.31": "(at " + modules("hosts/mastodon/main-units-from-systemd.nix") + ":9:22)",
	})
	for _, flags := range [][]string{nil, {"--k8s-pod-module", modules("k8s-pod.nix")}} {
		r := run(t, append(append([]string{"check"}, flags...), filepath.Join(dir, "on-k8s.nix"))...)
		if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "infinite recursion encountered") || strings.Count(strings.TrimSpace(r.ErrOut), "\n") > 0 ||
			!strings.Contains(r.ErrOut, ": fediversity.podRoles.mainUnits reads config.systemd.services (FR-007), and the node is on k8s-pod.nix") ||
			!strings.HasSuffix(strings.TrimSpace(r.ErrOut), at) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant it to end %s", flags, r.Code, r.ErrOut, at)
		}
	}
	r := run(t, "check", filepath.Join(dir, "off-k8s.nix"))
	if r.Code != cli.ExitFailed || !strings.Contains(r.Out, "PR106 option fediversity.podRoles.mainUnits") {
		t.Errorf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

// TestCheckFlakeAsTheCheckoutHoldsIt: run from the checkout, as a platform
// engineer runs it, each one-line error names the checkout's files relative
// to the working directory (as findings do) and gives the command that
// fixes it; following it, the check runs.
func TestCheckFlakeAsTheCheckoutHoldsIt(t *testing.T) {
	work := fixture.HostsFlake(t)
	t.Chdir(work.Dir)
	oneLine := func(r clitest.Result, want string) {
		t.Helper()
		if r.Code != cli.ExitCantRun || r.ErrOut != want+"\n" {
			t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", r.Code, r.ErrOut, want)
		}
	}

	// A tracked module imports one that git does not track: nix's copy of
	// the flake lacks it.
	work.Write("site/mastodon/roles.nix", `{ imports = [ ./cleanup.nix ]; fediversity.podRoles.mainUnits = [ "mastodon-cleanup" ]; }`+"\n")
	work.Write("site/mastodon/cleanup.nix", `{ systemd.services.mastodon-cleanup.script = "tootctl cache clear"; }`+"\n")
	work.Add("site/mastodon/roles.nix")
	oneLine(run(t, "check", "--flake", "./deploy#mastodon"),
		"podroles check: eval flake ./deploy#mastodon: site/mastodon/cleanup.nix is not tracked by git, and nix reads a flake in a git work tree from the files git tracks only: git add site/mastodon/cleanup.nix")
	work.Add("site/mastodon/cleanup.nix")
	if r := run(t, "check", "--flake", "./deploy#mastodon"); r.Code != cli.ExitOK {
		t.Errorf("added, the fix is read: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}

	// An import that the checkout lacks too.
	work.Write("site/directory/extra.nix", `{ imports = [ ./gone.nix ]; }`+"\n")
	work.Add("site/directory/extra.nix")
	oneLine(run(t, "check", "--flake", "./deploy#directory"),
		"podroles check: eval flake ./deploy#directory: site/directory/gone.nix does not exist")
	work.Git("rm", "--quiet", "--cached", "site/directory/extra.nix")

	// flake.lock that git does not track: what the error says to run,
	// run as it says, lets the check run.
	work.Git("rm", "--quiet", "--cached", "deploy/flake.lock")
	r := run(t, "check", "--flake", "./deploy#mastodon")
	want := "podroles check: eval flake ./deploy#mastodon: git does not track deploy/flake.lock, and nix reads a flake in a git work tree from the files git tracks only; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock ./deploy and git add deploy/flake.lock"
	oneLine(r, want)
	lock := exec.Command(nixtest.Nix(t), "--extra-experimental-features", "nix-command flakes", "flake", "lock", "./deploy")
	if out, err := lock.CombinedOutput(); err != nil {
		t.Fatalf("nix flake lock ./deploy: %v\n%s", err, out)
	}
	work.Add("deploy/flake.lock")
	if r := run(t, "check", "--flake", "./deploy#mastodon"); r.Code != cli.ExitOK {
		t.Errorf("locked and added: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}

	// From a folder of the checkout, the paths and the commands are
	// written for that folder.
	work.Git("rm", "--quiet", "--cached", "deploy/flake.lock")
	t.Chdir(filepath.Join(work.Dir, "deploy"))
	oneLine(run(t, "check", "--flake", ".#mastodon"),
		"podroles check: eval flake .#mastodon: git does not track flake.lock, and nix reads a flake in a git work tree from the files git tracks only; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: run nix flake lock and git add flake.lock")
}

// TestCheckJudgesItsOwnK8sPodModule: a host of the flake imports
// k8s-pod.nix itself, and site/mastodon/roles.nix lists mastodon-cleanup,
// which only the module's condition makes a unit of. Without
// --k8s-pod-module every definition of the name is that condition alone,
// and it is no unit of the node: PR101, at the list, as with the module
// named.
func TestCheckJudgesItsOwnK8sPodModule(t *testing.T) {
	work := fixture.HostsFlake(t)
	t.Chdir(work.Dir)
	for _, args := range [][]string{nil, {"--k8s-pod-module", "k8s-pod.nix"}} {
		r := run(t, append([]string{"check", "--flake", "./deploy#mastodon-on-k8s"}, args...)...)
		if r.Code != cli.ExitFailed || !strings.Contains(r.Out, "site/mastodon/roles.nix:1:3: error PR101 unit mastodon-cleanup") || strings.Contains(r.Out, "PR107") {
			t.Errorf("%q: exit %d, want PR101 at the list\n%s%s", args, r.Code, r.Out, r.ErrOut)
		}
	}
}

// TestCheckRefusesABareNameOfNothing: a bare argument that names no file or
// folder here is refused before nix runs, where nix would look it up in its
// flake registry, on the network; with a scheme, or as --flake, it reaches
// nix.
func TestCheckRefusesABareNameOfNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	marker := filepath.Join(t.TempDir(), "nix-ran")
	nix := filepath.Join(t.TempDir(), "nix")
	if err := os.WriteFile(nix, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"tpyo.nx", "hosts", "nixpkgs/nixos-26.05", "mastodon#web"} {
		r := run(t, "check", "--nix", nix, arg)
		local, _, _ := strings.Cut(arg, "#")
		want := "podroles check: " + local + ": no such file or folder; a remote flake is named with its scheme (github:OWNER/REPO#NODE, git+https://HOST/REPO#NODE, flake:NAME#NODE for nix's flake registry) or with --flake\n"
		if r.Code != cli.ExitCantRun || r.ErrOut != want {
			t.Errorf("%s: exit %d, stderr %q, want %q", arg, r.Code, r.ErrOut, want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: nix ran", arg)
		}
	}
	for _, args := range [][]string{{"flake:mastodon#web"}, {"github:example/platform#web"}, {"--flake", "mastodon#web"}} {
		run(t, append([]string{"check", "--nix", nix}, args...)...)
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("%q: did not reach nix", args)
		}
		os.Remove(marker)
	}
}

// TestCheckFlakeInAFolderNixCannotName: a flake whose work tree's path has
// a space and a non-ASCII letter is read as it is, staged and unstaged
// edits included, never at its last commit.
func TestCheckFlakeInAFolderNixCannotName(t *testing.T) {
	work := fixture.HostsFlakeAt(t, filepath.Join(t.TempDir(), "my platform ü"))
	flake := filepath.Join(work.Dir, "deploy") + "#mastodon"
	check := func(when string, want int, names string) {
		t.Helper()
		r := run(t, "check", "--flake", flake)
		if r.Code != want || !strings.Contains(r.Out, names) {
			t.Errorf("%s: exit %d, want %d naming %q\n%s%s", when, r.Code, want, names, r.Out, r.ErrOut)
		}
		if strings.Contains(r.Out+r.ErrOut, "podroles-eval-") {
			t.Errorf("%s: the report names the copy nix read, not the work tree:\n%s%s", when, r.Out, r.ErrOut)
		}
	}
	check("committed, a listed unit that no module defines", cli.ExitFailed, "mastodon-cleanup")

	work.Write("site/mastodon/cleanup.nix", `{ systemd.services.mastodon-cleanup.script = "tootctl cache clear"; }`)
	work.Add("site/mastodon/cleanup.nix")
	check("the unit's module staged", cli.ExitOK, "mastodon")

	work.Write("site/mastodon/roles.nix", `{ fediversity.podRoles.mainUnits = [ "mastodon-cleanupp" ]; }`+"\n")
	check("an uncommitted typo", cli.ExitFailed, "mastodon-cleanupp")
	work.Git("commit", "--quiet", "-am", "a typo")
	check("the typo committed", cli.ExitFailed, "mastodon-cleanupp")
}

// TestOutputThatNamesAnInput: -o onto a file that the command reads is
// refused before any evaluation (exit 2, one line), the file untouched; a
// report beside the flake's files, which nix does not read, is written.
func TestOutputThatNamesAnInput(t *testing.T) {
	work := fixture.HostsFlake(t)
	deploy := filepath.Join(work.Dir, "deploy")
	node := filepath.Join(t.TempDir(), "victim.nix")
	module := filepath.Join(t.TempDir(), "k8s-pod.nix")
	for path, text := range map[string]string{node: "{ }\n", module: "{ }\n"} {
		os.WriteFile(path, []byte(text), 0o644)
	}
	factsDoc := filepath.Join(t.TempDir(), "f.json")
	if r := run(t, "facts", "-o", factsDoc, repo("examples/directory.nix")); r.Code != cli.ExitOK {
		t.Fatalf("facts: exit %d\n%s", r.Code, r.ErrOut)
	}
	for _, c := range []struct {
		victim string
		args   []string
	}{
		{node, []string{"check", node, "--format", "json"}},
		{node, []string{"check", "--file", node}},
		{node, []string{"plan", node}},
		{filepath.Join(deploy, "flake.nix"), []string{"check", "--flake", deploy, "--format", "sarif"}},
		{filepath.Join(deploy, "flake.lock"), []string{"facts", "--flake", deploy + "#mastodon"}},
		{filepath.Join(work.Dir, "site/mastodon/roles.nix"), []string{"check", "--flake", deploy}},
		{factsDoc, []string{"check", "--facts", factsDoc}},
		{module, []string{"check", repo("examples/directory.nix"), "--k8s-pod-module", module}},
	} {
		before, _ := os.ReadFile(c.victim)
		r := run(t, append(c.args, "-o", c.victim)...)
		after, _ := os.ReadFile(c.victim)
		if r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, "is a file that podroles reads") || strings.Count(strings.TrimSpace(r.ErrOut), "\n") > 0 || string(after) != string(before) {
			t.Errorf("%q -o %s: exit %d, stderr %q; file kept: %v", c.args, c.victim, r.Code, r.ErrOut, string(after) == string(before))
		}
	}
	sarif := filepath.Join(deploy, "podroles.sarif")
	os.WriteFile(sarif, []byte("an earlier report"), 0o644)
	if r := run(t, "check", "--flake", deploy+"#directory", "--format", "sarif", "-o", sarif); r.Code != cli.ExitOK {
		t.Errorf("a report beside the flake's files: exit %d\n%s", r.Code, r.ErrOut)
	}
}

// TestBareFileWithAHash: a bare argument that names a node file whose
// name has a # is that file, not FLAKE#NODE.
func TestBareFileWithAHash(t *testing.T) {
	dir := t.TempDir()
	node := filepath.Join(dir, "web#1.nix")
	os.WriteFile(node, []byte(`{ networking.hostName = "web"; systemd.services.web = { }; fediversity.podRoles.roles.web = { replicas = 2; units = [ "web" ]; }; }`), 0o644)
	if r := run(t, "check", node); r.Code != cli.ExitOK || !strings.Contains(r.Out, "node web (file:"+node) {
		t.Errorf("exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}
