package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
)

// buildChecker builds podroles-check, and a hello-world as the floor of a
// Go binary's start-up, into a new folder.
func buildChecker(b *testing.B) (checker, hello string) {
	b.Helper()
	dir := b.TempDir()
	checker, hello = filepath.Join(dir, "podroles-check"), filepath.Join(dir, "hello")
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, build := range [][]string{{"-o", checker, "."}, {"-o", hello, filepath.Join(dir, "hello.go")}} {
		cmd := exec.Command("go", append([]string{"build"}, build...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	return checker, hello
}

// timed runs a command and returns its wall time.
func timed(b *testing.B, name string, args ...string) time.Duration {
	b.Helper()
	start := time.Now()
	cmd := exec.Command(name, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			b.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	return time.Since(start)
}

// BenchmarkStartup is the checker's start-up (`podroles-check --version`)
// beside a Go hello-world's, run in turn: "ms-over-hello" is what the
// checker's size and package inits add.
func BenchmarkStartup(b *testing.B) {
	checker, hello := buildChecker(b)
	var ours, floor time.Duration
	for b.Loop() {
		ours += timed(b, checker, "--version")
		floor += timed(b, hello)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/1000/n, "checker-ms")
	b.ReportMetric(float64(floor.Microseconds())/1000/n, "hello-ms")
	b.ReportMetric(float64((ours-floor).Microseconds())/1000/n, "ms-over-hello")
}

// BenchmarkCheckSmallNode is `podroles-check check` of examples/mastodon.nix
// beside the raw `nix eval` of the same projection (nixeval/document.nix),
// run in turn: "ratio" is what a small node pays for more than nix. The
// version of nix is kept from the first run, as a user's runs keep it.
func BenchmarkCheckSmallNode(b *testing.B) {
	nix := nixtest.Nix(b)
	checker, _ := buildChecker(b)
	root := fixture.RepoRoot(b)
	node := filepath.Join(root, "examples", "mastodon.nix")
	b.Setenv("PODROLES_VERSION_CACHE", filepath.Join(b.TempDir(), "nix-versions.json"))
	raw := []string{"--extra-experimental-features", "nix-command", "eval", "--json", "--impure", "--expr",
		"import " + filepath.Join(root, "nixeval", "document.nix") + " { nodes.mastodon = import " + node + "; }"}
	check := []string{"check", "--nix", nix, "--format", "json", node}
	timed(b, checker, check...) // keeps the version
	var ours, nixOnly time.Duration
	for b.Loop() {
		ours += timed(b, checker, check...)
		nixOnly += timed(b, nix, raw...)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ours.Microseconds())/1000/n, "check-ms")
	b.ReportMetric(float64(nixOnly.Microseconds())/1000/n, "nix-eval-ms")
	b.ReportMetric(float64(ours)/float64(nixOnly), "ratio")
}
