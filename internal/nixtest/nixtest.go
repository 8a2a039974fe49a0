// Package nixtest gives tests the nix they run.
//
// make test runs the tests that call nix once per nix that CI covers
// (Debian's nix 2.8, then Nix 2.24, Debian 13's 2.26 and 2.31; see
// docs/nix-versions.md), naming the nix in one variable, PODROLES_TEST_NIX. Every test that runs nix, directly, in
// an Evaluator or through a podroles subprocess (--nix), takes it from Nix:
// make puts a nix on PATH that refuses to run, so that a test which runs
// "nix" from PATH fails instead of testing the wrong version.
package nixtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fediversity/podroles/internal/nixversion"
)

// Env names the nix the tests run; unset, they run nix from PATH.
const Env = "PODROLES_TEST_NIX"

// Nix returns the absolute path of the nix the tests run, and fails the test
// when there is none. The first answer holds for the whole test binary, also
// in tests that empty PATH later.
func Nix(t testing.TB) string {
	t.Helper()
	if nix, ok := found.Load().(string); ok {
		return nix
	}
	nix, err := find()
	if err != nil {
		t.Fatal(err)
	}
	found.Store(nix)
	return nix
}

var found atomic.Value // string

func find() (string, error) {
	if nix := os.Getenv(Env); nix != "" {
		abs, err := filepath.Abs(nix)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", Env, nix, err)
		}
		if info, err := os.Stat(abs); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("%s=%s: not an executable file", Env, nix)
		}
		return abs, nil
	}
	nix, err := exec.LookPath("nix")
	if err != nil {
		return "", errors.New("nix is not installed; the tests that evaluate nodes need the real nix (apt-get install nix-bin, or name one in " + Env + ")")
	}
	return filepath.Abs(nix)
}

var versions sync.Map // nix path → versionResult

type versionResult struct {
	v   nixversion.Version
	err error
}

// NixVersion returns the version of the nix of Nix, read once per test
// binary.
func NixVersion(t testing.TB) nixversion.Version {
	t.Helper()
	nix := Nix(t)
	r, ok := versions.Load(nix)
	if !ok {
		r, _ = versions.LoadOrStore(nix, readVersion(nix))
	}
	res := r.(versionResult)
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res.v
}

func readVersion(nix string) versionResult {
	out, err := exec.Command(nix, "--version").Output()
	if err != nil {
		return versionResult{err: fmt.Errorf("%s --version: %v", nix, err)}
	}
	v, err := nixversion.FromOutput(string(out))
	return versionResult{v, err}
}

// Releases are the nix releases make test runs the tests on: Debian's
// 2.8, then those of the Makefile's TEST_NIXES.
var Releases = []string{"2.8", "2.24", "2.26", "2.31"}

// Pick returns, of byRelease, the entry of the newest release that is not
// newer than the nix the tests run: what that nix is expected to do where
// releases differ. A key may name several releases, "2.24 2.26 2.31", whose
// entry it is; a release that no key names (2.28, say) is held to the
// entry of the release before it.
func Pick[T any](t testing.TB, byRelease map[string]T) T {
	t.Helper()
	v := NixVersion(t)
	var best nixversion.Version
	var out T
	found := false
	for key, value := range byRelease {
		for _, s := range strings.Fields(key) {
			w, err := nixversion.Parse(s)
			if err != nil {
				t.Fatalf("nixtest.Pick: %v", err)
			}
			if !v.Less(w) && (!found || best.Less(w)) {
				best, out, found = w, value, true
			}
		}
	}
	if !found {
		t.Fatalf("nixtest.Pick: no expectation for nix %s", v)
	}
	return out
}

// NamesEachRelease says what is wrong with byRelease's keys, if they do
// not name each of Releases exactly once: a table that states what every
// release the tests run on is expected to do.
func NamesEachRelease[T any](byRelease map[string]T) error {
	named := map[string]int{}
	for key := range byRelease {
		for _, s := range strings.Fields(key) {
			named[s]++
		}
	}
	var problems []string
	for _, r := range Releases {
		if named[r] != 1 {
			problems = append(problems, fmt.Sprintf("%s named %d times", r, named[r]))
		}
		delete(named, r)
	}
	for s := range named {
		problems = append(problems, s+" is no release the tests run on")
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return errors.New(strings.Join(problems, ", "))
	}
	return nil
}
