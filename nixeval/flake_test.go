package nixeval

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fediversity/podroles/internal/fixture"
)

// nixResolves returns the flake reference that nix's command line makes of
// ref in the folder cwd (nix flake metadata's resolvedUrl), or nix's error.
// Nix 2.24 leaves a flake's folder in its repository (?dir=) out of the
// metadata, though it reads the flake there: the folder comes from the
// evaluation of the flake's subdir output instead, which also fails where
// nix refuses the reference.
func nixResolves(t *testing.T, cwd, ref string) (string, error) {
	t.Helper()
	nix := func(args ...string) ([]byte, error) {
		cmd := exec.Command(requireNix(t), append([]string{"--extra-experimental-features", "nix-command flakes"}, args...)...)
		cmd.Dir = cwd
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, &exec.ExitError{Stderr: []byte(stderr.String())}
		}
		return out, nil
	}
	out, err := nix("flake", "metadata", "--json", ref)
	if err != nil {
		return "", err
	}
	var meta struct {
		ResolvedURL string `json:"resolvedUrl"`
	}
	if err := json.Unmarshal(out, &meta); err != nil {
		t.Fatalf("nix flake metadata printed %s: %v", out, err)
	}
	subdir, err := nix("eval", "--raw", ref+"#subdir")
	if err != nil {
		return "", err
	}
	if len(subdir) > 0 && !strings.Contains(meta.ResolvedURL, "dir=") {
		sep := "?"
		if strings.Contains(meta.ResolvedURL, "?") {
			sep = "&"
		}
		meta.ResolvedURL += sep + "dir=" + strings.TrimPrefix(string(subdir), "/")
	}
	return meta.ResolvedURL, nil
}

// emptyFlake has no nodes; its subdir is its folder in the source nix
// fetched ("/deploy"), or "" at the source's top.
const emptyFlake = `{ outputs = { self }: { nixosConfigurations = { }; subdir = let top = toString self.sourceInfo.outPath; here = toString ./.; in builtins.substring (builtins.stringLength top) (-1) here; }; }`

// TestFlakeReferencesAsNixReadsThem resolves local flake references with
// podroles and with nix's command line, from the same folders, and wants
// the same reference: git+file with ?dir= in a git work tree (dirty or
// clean, a flake in a subfolder, a folder below the flake, a shallow
// clone), path: elsewhere.
func TestFlakeReferencesAsNixReadsThem(t *testing.T) {
	requireNix(t)
	repo := fixture.NewRepo(t)
	repo.Write("flake.nix", emptyFlake)
	repo.Write("deploy/flake.nix", emptyFlake)
	repo.Write("deploy/hosts/web.nix", "{ }")
	repo.Add("flake.nix", "deploy")
	repo.Commit("flakes")
	repo.Write("deploy/untracked.nix", "{ }") // dirty from here on

	shallowParent := t.TempDir()
	shallow := filepath.Join(shallowParent, "clone")
	if out, err := exec.Command("git", "clone", "--quiet", "--depth", "1", "file://"+repo.Dir, shallow).CombinedOutput(); err != nil {
		t.Fatalf("git clone --depth 1: %v\n%s", err, out)
	}

	plain := writeTree(t, map[string]string{"flake.nix": emptyFlake, "hosts/web.nix": "{ }"})

	cases := []struct{ cwd, ref string }{
		{repo.Dir, "."},
		{repo.Dir, "./deploy"},
		{repo.Dir, "deploy/"},
		{filepath.Join(repo.Dir, "deploy"), "."},
		{filepath.Join(repo.Dir, "deploy", "hosts"), "."},
		{filepath.Join(repo.Dir, "deploy"), ".."},
		{t.TempDir(), filepath.Join(repo.Dir, "deploy")},
		{repo.Dir, ".?dir=deploy"},
		{shallow, "."},
		{plain, "."},
		{plain, "./hosts"},
		{t.TempDir(), plain},
		{plain, "path:."},
		{repo.Dir, "path:./deploy"},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			t.Chdir(c.cwd)
			s, err := FlakeSource(c.ref + "#web")
			if err != nil {
				t.Fatalf("podroles: %v", err)
			}
			want, err := nixResolves(t, c.cwd, c.ref)
			if err != nil {
				t.Fatalf("nix: %s", err.(*exec.ExitError).Stderr)
			}
			if rel, ok := strings.CutPrefix(want, "path:."); ok {
				want = "path:" + filepath.Join(c.cwd, "."+rel) // nix keeps it relative to cwd
			}
			if s.Ref != want || s.Attr != "web" {
				t.Errorf("in %s, %s: podroles reads %s, nix reads %s", c.cwd, c.ref, s.Ref, want)
			}
		})
	}

	t.Run("both a folder and ?dir=", func(t *testing.T) {
		t.Chdir(filepath.Join(repo.Dir, "deploy"))
		_, err := FlakeSource(".?dir=deploy")
		if _, nixErr := nixResolves(t, ".", ".?dir=deploy"); nixErr == nil || err == nil || !strings.Contains(err.Error(), "give one of them") {
			t.Errorf("podroles: %v; nix: %v", err, nixErr)
		}
	})
	t.Run("a link to a flake's folder", func(t *testing.T) {
		link := filepath.Join(t.TempDir(), "link")
		if err := os.Symlink(filepath.Join(repo.Dir, "deploy"), link); err != nil {
			t.Fatal(err)
		}
		// nix 2.8 refuses the link; newer nix resolves it, and so does
		// podroles.
		s, err := FlakeSource(link)
		if err != nil || s.Ref != "git+file://"+repo.Dir+"?dir=deploy" || s.Checkout != repo.Dir {
			t.Errorf("%+v, %v", s, err)
		}
	})
	t.Run("a bare name", func(t *testing.T) {
		t.Chdir(repo.Dir)
		// nix reads it as the registry's flake:deploy, never as the folder.
		if _, err := FlakeSource("deploy#web"); err == nil || !strings.Contains(err.Error(), "write ./deploy") {
			t.Errorf("err = %v", err)
		}
		s, err := FlakeSource("nixpkgs")
		if err != nil || s.Ref != "nixpkgs" || s.Checkout != "" {
			t.Errorf("a registry name is passed on: %+v, %v", s, err)
		}
	})
	t.Run("an untracked flake.nix", func(t *testing.T) {
		repo.Write("new/flake.nix", emptyFlake)
		// The git add to run is written for where podroles runs.
		_, err := FlakeSource(filepath.Join(repo.Dir, "new"))
		if err == nil || !strings.Contains(err.Error(), "git -C "+repo.Dir+" add new/flake.nix") {
			t.Errorf("outside the work tree: err = %v", err)
		}
		t.Chdir(filepath.Join(repo.Dir, "deploy"))
		_, err = FlakeSource("../new")
		if err == nil || !strings.HasSuffix(err.Error(), ": git add ../new/flake.nix") {
			t.Errorf("inside the work tree: err = %v", err)
		}
	})
	t.Run("no flake", func(t *testing.T) {
		if _, err := FlakeSource(filepath.Join(repo.Dir, "deploy", "hosts", "web.nix")); err == nil {
			t.Error("a file that is no flake.nix is no flake")
		}
		if _, err := FlakeSource(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no flake.nix") {
			t.Errorf("err = %v", err)
		}
	})
}

// TestFlakeInGitWorkTreeReadsTrackedFiles: a unit whose module is only an
// untracked file does not exist for nix's command line, nor for podroles;
// staged, it does, before any commit.
func TestFlakeInGitWorkTreeReadsTrackedFiles(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	repo.Write("site/mastodon/cleanup.nix", `{ systemd.services.mastodon-cleanup.script = "tootctl cache clear"; }`)

	t.Chdir(filepath.Join(repo.Dir, "deploy"))
	load := func() *Source {
		s, err := FlakeSource(".#mastodon")
		if err != nil {
			t.Fatal(err)
		}
		return &s
	}
	s := load()
	if want := "git+file://" + repo.Dir + "?dir=deploy"; s.Ref != want || s.Checkout != repo.Dir {
		t.Fatalf("ref %s, checkout %s; want %s", s.Ref, s.Checkout, want)
	}
	nodes, err := extract(t, evaluator(t), []Source{*s})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nodes[0].Units["mastodon-cleanup"]; ok {
		t.Error("podroles read an untracked file of the work tree, which nix does not")
	}
	if want := "flake:git+file://" + repo.Dir + "?dir=deploy#mastodon"; nodes[0].Source != want {
		t.Errorf("source = %q, want %q", nodes[0].Source, want)
	}

	repo.Add("site/mastodon/cleanup.nix")
	nodes, err = extract(t, evaluator(t), []Source{*load()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nodes[0].Units["mastodon-cleanup"]; !ok {
		t.Error("a staged file of a dirty work tree is read by nix, and must be by podroles")
	}
}

// TestK8sPodModuleOfTheCheckout: --k8s-pod-module names the checkout's
// k8s-pod.nix, which a node of the flake imports itself from the store copy:
// the module system must see one module (its list of platform units is not
// doubled), and the units only it makes are named.
func TestK8sPodModuleOfTheCheckout(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	checkoutModuleAppliedOnce(t, repo.Dir)
}

// checkoutModuleAppliedOnce checks node mastodon-on-k8s of the flake in
// deploy/ of checkout with checkout's k8s-pod.nix.
func checkoutModuleAppliedOnce(t *testing.T, checkout string) {
	t.Helper()
	s, err := FlakeSource(filepath.Join(checkout, "deploy") + "#mastodon-on-k8s")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := extract(t, &Evaluator{Nix: requireNix(t), K8sPodModule: filepath.Join(checkout, "k8s-pod.nix")}, []Source{s})
	if err != nil {
		t.Fatal(err)
	}
	n := nodes[0]
	if want := []string{"nscd", "systemd-tmpfiles-resetup"}; !reflect.DeepEqual(n.K8sPod.PlatformUnits, want) {
		t.Errorf("platform units %q: the module was applied twice", n.K8sPod.PlatformUnits)
	}
	if !reflect.DeepEqual(n.K8sPod.AddedUnits, []string{"mastodon-cleanup"}) {
		t.Errorf("added units = %q, want mastodon-cleanup", n.K8sPod.AddedUnits)
	}
}

// TestDefaultHostNameNamesNoNode: two hosts that leave networking.hostName
// at NixOS's default "nixos" are named by their files, as a node without a
// hostName is; a host that sets "nixos" itself keeps it.
func TestDefaultHostNameNamesNoNode(t *testing.T) {
	requireNix(t)
	fixture.NixpkgsLib(t)
	modules := filepath.Join(fixture.RepoRoot(t), "testdata", "modules")
	system := func(extra string) string {
		return `(import ` + modules + `/nixos { }).nixosSystem { modules = [ { systemd.services.web = { }; } ` + extra + ` ]; }`
	}
	dir := writeTree(t, map[string]string{
		"web1.nix":            system(""),
		"web2/default.nix":    system(""),
		"by-mkdefault.nix":    system(`({ lib, ... }: { networking.hostName = lib.mkDefault "nixos"; })`),
		"plain-no-option.nix": `{ systemd.services.web = { }; }`,
	})
	var sources []Source
	for _, f := range []string{"web1.nix", "web2/default.nix", "by-mkdefault.nix", "plain-no-option.nix"} {
		sources = append(sources, mustSources(t, FileSource, filepath.Join(dir, f))...)
	}
	nodes, err := (evaluator(t)).Load(t.Context(), sources)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range nodes {
		got[n.Name] = n.NamedAfterFile
	}
	if want := map[string]bool{"web1": true, "web2": true, "nixos": false, "plain-no-option": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("names (and whether named after the file) = %v, want %v", got, want)
	}
}

// TestK8sPodModuleOfTheCheckoutThroughALink: the checkout reached through a
// symbolic link (a home folder on another disk, ~/src linked to /data/src),
// flake and module given by the link's paths. Nix reads the flake at the
// real path; the module is still the checkout's, applied as the store
// copy that the node imports, once.
func TestK8sPodModuleOfTheCheckoutThroughALink(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	link := filepath.Join(t.TempDir(), "src")
	if err := os.Symlink(repo.Dir, link); err != nil {
		t.Fatal(err)
	}
	checkoutModuleAppliedOnce(t, link)
}

// TestK8sPodModuleGivenByALink: a host imports k8s-pod.nix, and
// --k8s-pod-module names it through a link to the same file: it is one
// module, applied once, its conditions are the module's, and a wrong name
// in a list is no unit of the node.
func TestK8sPodModuleGivenByALink(t *testing.T) {
	requireNix(t)
	fixture.NixpkgsLib(t)
	modules := filepath.Join(fixture.RepoRoot(t), "testdata", "modules")
	dir := writeTree(t, map[string]string{
		"web.nix": `(import ` + modules + `/nixos { }).nixosSystem { modules = [ ` + modules + `/k8s-pod.nix {
  networking.hostName = "web";
  systemd.services.web = { };
  fediversity.podRoles.roles.web = { replicas = 1; units = [ "web" "web-typo" ]; };
} ]; }`,
	})
	link := filepath.Join(dir, "platform-k8s-pod.nix")
	if err := os.Symlink(filepath.Join(modules, "k8s-pod.nix"), link); err != nil {
		t.Fatal(err)
	}
	nodes, err := extract(t, &Evaluator{Nix: requireNix(t), K8sPodModule: link}, mustSources(t, FileSource, filepath.Join(dir, "web.nix")))
	if err != nil {
		t.Fatal(err)
	}
	if got := nodes[0].K8sPod.AddedUnits; !reflect.DeepEqual(got, []string{"web-typo"}) {
		t.Errorf("added units = %q, want web-typo", got)
	}
	if want := []string{"nscd", "systemd-tmpfiles-resetup"}; !reflect.DeepEqual(nodes[0].K8sPod.PlatformUnits, want) {
		t.Errorf("platform units %q: the module was applied twice, by the link and by the file", nodes[0].K8sPod.PlatformUnits)
	}
}

// TestK8sPodModuleImportedByALink: the other direction of
// TestK8sPodModuleGivenByALink, in a flake: the host imports
// k8s-pod-link.nix, a link (tracked by git, copied as a link into the store)
// to the checkout's k8s-pod.nix, which --k8s-pod-module names. It is the
// same file: the module is applied once, under the host's name for it, and
// the unit that only its condition makes is named.
func TestK8sPodModuleImportedByALink(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	link := filepath.Join(repo.Dir, "k8s-pod-link.nix")
	os.Remove(link)
	if err := os.Symlink("k8s-pod.nix", link); err != nil {
		t.Fatal(err)
	}
	flake, err := os.ReadFile(filepath.Join(repo.Dir, "deploy", "flake.nix"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(flake), `../hosts/mastodon ../k8s-pod.nix ]`, `../hosts/mastodon ../k8s-pod-link.nix ]`, 1)
	if text == string(flake) {
		t.Fatal("the flake has no node that imports ../k8s-pod.nix")
	}
	repo.Write("deploy/flake.nix", text)
	repo.Add("deploy/flake.nix", "k8s-pod-link.nix")
	checkoutModuleAppliedOnce(t, repo.Dir)
}

// TestFlakeNodeHostNameConflict: a flake's node is named by its attribute,
// yet nixos-rebuild evaluates its networking.hostName: conflicting
// definitions of it are the module system's error, as for a file's node.
func TestFlakeNodeHostNameConflict(t *testing.T) {
	requireNix(t)
	repo := fixture.HostsFlake(t)
	repo.Write("site/mastodon/name.nix", `{ networking.hostName = "mastodon-eu"; }`+"\n")
	repo.Add("site/mastodon/name.nix")
	_, err := extract(t, evaluator(t), mustSources(t, FlakeSource, filepath.Join(repo.Dir, "deploy")+"#mastodon"))
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "networking.hostName") || !strings.Contains(ee.Message, "conflicting definition values") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "site/mastodon/name.nix") {
		t.Errorf("the error does not name the checkout's file: %v", err)
	}
}
