package harnesscmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/golden"
)

// TestGoldenScenariosManifest keeps what scenarios manifest prints: a
// Job of every suite with --disruptive and a base, the access of a
// runner outside the cluster, and a Job that adds no probe to the main
// pod (--from-runner).
func TestGoldenScenariosManifest(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"manifest.yaml", []string{"--node", "directory", "--image", "registry.example/podroles:1", "--facts", "testdata/scenarios/facts.json", "--inventory", "testdata/scenarios/inventory.yaml", "--disruptive"}},
		{"manifest-ldap.yaml", []string{"--node", "directory", "--image", "registry.example/podroles:1", "--facts", "testdata/scenarios/facts.json", "--suite", "ldap", "--run", "wrong-", "--report-claim", "reports"}},
		{"manifest-outside.yaml", []string{"--outside", "--suite", "deployments,rotation"}},
		{"manifest-from-runner.yaml", []string{"--node", "directory", "--image", "registry.example/podroles:1", "--facts", "testdata/scenarios/facts.json", "--suite", "ldap", "--from-runner"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, append([]string{"scenarios", "manifest", "--namespace", "web"}, c.args...)...)
			if r.Code != cli.ExitOK {
				t.Fatalf("exit %d\n%s", r.Code, r.ErrOut)
			}
			golden.Check(t, filepath.Join("testdata", "scenarios", c.name), []byte(r.Out))
		})
	}
}

// TestManifestOfADisruptiveBase: a base with disruptive: true lets the
// runner run the disruptive scenarios, so the Role grants them.
func TestManifestOfADisruptiveBase(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.yaml")
	if err := os.WriteFile(base, []byte("disruptive: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"scenarios", "manifest", "--namespace", "web", "--node", "directory", "--image", "i", "--facts", "testdata/scenarios/facts.json", "--suite", "rotation"}
	quiet, loud := run(t, args...), run(t, append(args, "--inventory", base)...)
	if quiet.Code != cli.ExitOK || loud.Code != cli.ExitOK {
		t.Fatalf("exit %d, %d\n%s%s", quiet.Code, loud.Code, quiet.ErrOut, loud.ErrOut)
	}
	if strings.Contains(quiet.Out, "pods/exec") || !strings.Contains(loud.Out, "create on pods/exec: rotation/") {
		t.Errorf("rotation's exec granted without disruptive: %v, with a disruptive base: %v", strings.Contains(quiet.Out, "pods/exec"), strings.Contains(loud.Out, "pods/exec"))
	}
}

// TestScenariosManifestCannotRun: a wrong flag is one line on stderr and
// exit 2, before any node is evaluated.
func TestScenariosManifestCannotRun(t *testing.T) {
	facts := "testdata/scenarios/facts.json"
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "podroles scenarios manifest: give --namespace"},
		{[]string{"--namespace", "Web"}, `podroles scenarios manifest: --namespace "Web": a lowercase RFC 1123 label`},
		{[]string{"--namespace", "web", "--image", "i", facts}, "podroles scenarios manifest: give --node"},
		{[]string{"--namespace", "web", "--node", "web", facts}, "podroles scenarios manifest: give --image"},
		{[]string{"--namespace", "web", "--node", "directory", "--image", "i"}, "podroles scenarios manifest: give the node's sources"},
		{[]string{"--namespace", "web", "--node", "directory", "--image", "i", "--suite", "ldapp", "nope.nix"}, `podroles scenarios manifest: --suite: no suite "ldapp"`},
		{[]string{"--namespace", "web", "--node", "directory", "--image", "i", "--run", "(", "nope.nix"}, `podroles scenarios manifest: --run "(": error parsing regexp`},
		{[]string{"--namespace", "web", "--node", "directory", "--image", "i", "--run", "nothing-matches", "--facts", facts}, "podroles scenarios manifest: no scenario matches --run \"nothing-matches\""},
		{[]string{"--namespace", "web", "--node", "nope", "--image", "i", "--facts", facts}, "podroles scenarios manifest: --node nope: the sources give no node nope"},
		{[]string{"--namespace", "web", "--outside", "--image", "i"}, "podroles scenarios manifest: --outside prints no Job"},
		{[]string{"--namespace", "web", "--node", "directory", "--image", "i", "--inventory", "nope.yaml", "--facts", facts}, "podroles scenarios manifest: inventory nope.yaml: no such file"},
	} {
		r := run(t, append([]string{"scenarios", "manifest"}, c.args...)...)
		if r.Code != cli.ExitCantRun || !strings.HasPrefix(r.ErrOut, c.want) || strings.Count(r.ErrOut, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q, want exit 2 and %q", c.args, r.Code, r.ErrOut, c.want)
		}
	}
}
