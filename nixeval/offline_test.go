package nixeval

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/fixture"
)

// netnsNix is the nix of the tests in a network namespace of its own, with
// no interface up (unshare --net): there a nix that reaches for the
// network fails, and one run without --offline warns that it has none. It
// skips the test where no namespace can be made.
func netnsNix(t *testing.T) string {
	t.Helper()
	nix := requireNix(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed: the test runs nix in a network namespace of its own")
	}
	if out, err := exec.Command(unshare, "--net", "true").CombinedOutput(); err != nil {
		t.Skipf("no network namespace for the test, which needs root (or user namespaces): unshare --net: %v: %s", err, bytes.TrimSpace(out))
	}
	wrapper := filepath.Join(t.TempDir(), "nix")
	script := "#!/bin/sh\nexec " + unshare + " --net " + nix + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

// TestNoNetwork: a flake in a folder, the same flake in a git work tree, a
// bare folder and .nix files give the same facts and errors in a network
// namespace with no interface as here, and nix warns of nothing there.
// A file that asks for the flake registry's entry finds no global
// registry to download, here or there.
func TestNoNetwork(t *testing.T) {
	offline := netnsNix(t)
	files := map[string]string{
		"plain/a.nix":  `{ networking.hostName = "file-a"; systemd.services.a = { }; fediversity.podRoles.mainUnits = [ "a" ]; }`,
		"registry.nix": `{ systemd.services = (builtins.getFlake "flake:podroles-test-no-such-entry").nixosModules; }`,
	}
	flake := flakeFiles(t, map[string]string{"broken.nix": `lite: { zz-throws = lite.nixosSystem { modules = [ { systemd.services = throw "zz throws"; } ]; }; }`})
	for name, text := range flake {
		files["hosts/"+name] = text
	}
	work := writeTree(t, files)
	repo := fixture.NewRepo(t)
	for name, text := range flakeFiles(t, nil) {
		repo.Write(name, text)
	}
	repo.Add(".")
	repo.Commit("the flake") // a dirty tree is a warning of nix's
	t.Chdir(work)

	var sources []Source
	for _, arg := range []string{"hosts", repo.Dir + "#web", "plain/a.nix"} {
		sources = append(sources, mustSources(t, GuessSource, arg)...)
	}
	if real, _ := filepath.EvalSymlinks(filepath.Join(work, "hosts")); sources[0].Checkout != real {
		t.Fatalf("the bare folder hosts is read as %s, not as the folder %s", sources[0].Ref, real)
	}
	registry := mustSources(t, GuessSource, "registry.nix")

	var outcomes []string
	for _, nix := range []string{requireNix(t), offline} {
		nodes, err := extract(t, &Evaluator{Nix: nix, Jobs: 2}, sources)
		var failing []string
		for _, e := range errorsOf(err) {
			var ee *EvalError
			if errors.As(e, &ee) {
				failing = append(failing, ee.Node)
			}
		}
		// The other nodes come beside the error.
		if len(nodes) != 4 || len(failing) != 1 || failing[0] != "zz-throws" {
			t.Fatalf("%s: %d nodes, failing %q, want 4 and zz-throws alone: %v", nix, len(nodes), failing, err)
		}
		good := append([]Source{sources[0]}, sources[1:]...)
		good[0].Attr = "mastodon"
		nodes, err = extract(t, &Evaluator{Nix: nix, Jobs: 2}, good)
		if err != nil || len(nodes) != 3 {
			t.Fatalf("%s: %d nodes, %v", nix, len(nodes), err)
		}
		// Alone, the file is the first task of its worker: what nix
		// prints as it starts is in the error's detail.
		_, regErr := extract(t, &Evaluator{Nix: nix, Jobs: 1}, registry)
		var ee *EvalError
		if !errors.As(regErr, &ee) || !strings.Contains(ee.Message, "cannot find flake 'flake:podroles-test-no-such-entry' in the flake registries") {
			t.Fatalf("%s: %v", nix, regErr)
		}
		for _, line := range strings.Split(ee.Detail, "\n") {
			if strings.HasPrefix(line, "warning:") {
				t.Errorf("%s: nix warns: %s", nix, line)
			}
		}
		outcomes = append(outcomes, outcomeOf(t, nodes, errors.Join(err, regErr)))
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("without a network, the evaluation differs:\n%s\nwithout:\n%s", outcomes[0], outcomes[1])
	}
}

// TestBareFolder: a bare argument that is a folder here is that folder's
// flake, never the flake registry's entry of its name; a folder without a
// flake.nix is refused with one line that names it, also inside a flake
// (a bare argument is no search for the flake above it).
func TestBareFolder(t *testing.T) {
	work := writeTree(t, map[string]string{
		"hosts/flake.nix":      `{ outputs = _: { }; }`,
		"hosts/site/web.nix":   `{ }`,
		"plain/web.nix":        `{ }`,
		"deploy/flake.nix":     `{ outputs = _: { }; }`,
		"deploy/hosts/web.nix": `{ }`,
	})
	t.Chdir(work)
	real, err := filepath.EvalSymlinks(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"hosts", "hosts#web", "./hosts", filepath.Join(work, "hosts")} {
		s, err := GuessSource(arg)
		if err != nil {
			t.Errorf("%s: %v", arg, err)
			continue
		}
		if want := "path:" + filepath.Join(real, "hosts"); s.Ref != want {
			t.Errorf("%s: nix gets %s, want %s", arg, s.Ref, want)
		}
	}
	for arg, want := range map[string]string{
		"plain":        "plain: no flake.nix in this folder; name a node file with --file plain/NAME.nix, or the folder of a flake",
		"plain#web":    "plain: no flake.nix in this folder; name a node file with --file plain/NAME.nix, or the folder of a flake",
		"hosts/site":   "hosts/site: no flake.nix in this folder; name a node file with --file hosts/site/NAME.nix, or the folder of a flake",
		"deploy/hosts": "deploy/hosts: no flake.nix in this folder; name a node file with --file deploy/hosts/NAME.nix, or the folder of a flake",
	} {
		_, err := GuessSource(arg)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", arg, err, want)
		}
	}
	// --flake reads a name as nix does, the registry's entry, but not
	// where a folder of that name is here without a flake.nix: that is
	// most likely a slip, and flake:NAME still names the entry.
	if _, err := FlakeSource("plain"); err == nil || !strings.Contains(err.Error(), "the folder plain has no flake.nix") {
		t.Errorf("--flake plain: %v", err)
	}
	if s, err := FlakeSource("flake:plain"); err != nil || s.Ref != "flake:plain" {
		t.Errorf("--flake flake:plain: %+v, %v", s, err)
	}
	if s, err := FlakeSource("nixpkgs"); err != nil || s.Ref != "nixpkgs" {
		t.Errorf("--flake nixpkgs: %+v, %v", s, err)
	}
}
