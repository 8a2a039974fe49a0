package nixeval

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestVersionCache: a second run with the same nix asks no `nix --version`;
// a nix replaced in place is asked again, and a cached old nix is still
// refused.
func TestVersionCache(t *testing.T) {
	nix, log := countingNix(t)
	cache := filepath.Join(t.TempDir(), "podroles", "nix-versions.json")
	versionCalls := func() int {
		_, n := evaluations(t, log)
		return n
	}
	check := func() error { return (&Evaluator{Nix: nix, VersionCache: cache}).checkVersion(context.Background()) }

	for i := range 2 {
		if err := check(); err != nil {
			t.Fatal(err)
		}
		if got := versionCalls(); got != 1 {
			t.Fatalf("run %d: %d calls of nix --version, want 1 in all", i+1, got)
		}
	}
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}

	// The same path, another nix: its file's size and time differ.
	old, _ := oldNix(t, "2.3.16")
	script, err := os.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nix, script, 0o755); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(nix, future, future)
	for range 2 {
		var tooOld *NixTooOldError
		if err := check(); !errors.As(err, &tooOld) {
			t.Fatalf("a nix replaced by 2.3.16: err = %v, want it refused", err)
		}
	}

	// A cache that is no JSON is no cache.
	os.WriteFile(cache, []byte("garbage"), 0o644)
	if err := check(); err == nil {
		t.Fatal("a broken cache passed a nix that is too old")
	}
}
