package nixeval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Debian's nix-bin: its command, and the database of its store.
const (
	debianNix   = "/usr/bin/nix"
	debianNixDB = "/nix/var/nix/db"
)

// TestOtherNixLeavesDebianNixAlone: a nix other than Debian's (make
// test's later runs) neither opens Debian nix's database nor adds to its
// store. Both use the store folder /nix/store, and a root nix's default
// state folder is Debian's. While the test holds Debian nix's store lock,
// the other nix evaluates files and flakes (path: and git+file:, whose
// sources it copies into its store) and hashes a folder. Then Debian's
// nix must still work.
func TestOtherNixLeavesDebianNixAlone(t *testing.T) {
	nix := requireNix(t)
	if _, err := os.Stat(debianNix); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("Debian's nix-bin is not installed (%v); make deps installs it", err)
		}
		t.Skipf("Debian's nix-bin is not installed: %v", err)
	}
	if same(t, nix, debianNix) {
		t.Skip("the tests run Debian's nix itself")
	}

	// A flake no nix has seen: its source's store path is new.
	nonce := make([]byte, 8)
	rand.Read(nonce)
	dir := writeTree(t, map[string]string{
		"flake.nix": fmt.Sprintf(`{ outputs = { self }: { nonce = "%x"; nixosConfigurations.web.config.systemd.services.web = { }; }; }`, nonce),
		"node.nix":  `{ networking.hostName = "web"; systemd.services = { }; }`,
	})
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.name=podroles", "-c", "user.email=podroles@localhost", "commit", "-q", "-m", "a flake")

	var sourcePath string
	func() {
		// While the test holds Debian nix's big lock exclusively, no Debian
		// nix can open the database: what changes in it is the other
		// nix's doing. A nix that tries to open it waits for the lock, and
		// the timeout below says so. (Another user's Debian nix waits for
		// these few seconds too.)
		unlock := lockDebianStore(t)
		defer unlock()
		before := snapshot(t, debianNixDB)

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sources := append(mustSources(t, FileSource, filepath.Join(dir, "node.nix")),
			mustSources(t, FlakeSource, "path:"+dir+"#web", "git+file://"+dir+"#web")...)
		if _, err := (&Evaluator{Nix: nix}).Extract(ctx, sources); err != nil {
			t.Fatalf("%v (a nix that waits here for Debian nix's store lock has opened its database)", err)
		}
		out, err := exec.CommandContext(ctx, nix, "--extra-experimental-features", "nix-command flakes",
			"eval", "--raw", "--impure", "--expr", `(builtins.getFlake "path:`+dir+`").outPath`).Output()
		if err != nil {
			t.Fatalf("nix eval: %v", err)
		}
		sourcePath = string(out)
		if err := exec.CommandContext(ctx, nix, "--extra-experimental-features", "nix-command", "hash", "path", dir).Run(); err != nil {
			t.Fatalf("nix hash path: %v", err)
		}

		if after := snapshot(t, debianNixDB); !maps.Equal(before, after) {
			t.Errorf("%s changed while only %s ran:\n before %v\n after  %v", debianNixDB, nix, before, after)
		}
	}()

	if !strings.HasPrefix(sourcePath, "/nix/store/") {
		t.Fatalf("the flake's source is at %q, not in /nix/store", sourcePath)
	}
	if _, err := os.Lstat(sourcePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s copied the flake's source into Debian nix's /nix/store: %s (%v)", nix, sourcePath, err)
	}
	// Debian's nix still works: it opens its database, finds the path not
	// valid there, and copies the same source into its own store.
	debian := func(args ...string) (string, error) {
		cmd := exec.Command(debianNix, append([]string{"--extra-experimental-features", "nix-command flakes"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		return string(out), nil
	}
	if out, err := debian("path-info", sourcePath); err == nil {
		t.Errorf("Debian's nix has %s, which only %s made: %s", sourcePath, nix, out)
	}
	out, err := debian("eval", "--raw", "--impure", "--expr", `(builtins.getFlake "path:`+dir+`").nonce`)
	if err != nil || out != fmt.Sprintf("%x", nonce) {
		t.Fatalf("Debian's nix after %s: %q, %v", nix, out, err)
	}
	if _, err := debian("path-info", sourcePath); err != nil {
		t.Errorf("Debian's nix evaluated the flake but has no %s: %v", sourcePath, err)
	}
}

// same says whether two paths are the same file, links followed.
func same(t *testing.T, a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(ia, ib) {
		return true
	}
	// A wrapper script that runs Debian's nix.
	text, err := os.ReadFile(a)
	return err == nil && len(text) < 4096 && strings.Contains(string(text), b)
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// lockDebianStore takes Debian nix's big lock exclusively, waiting up to two
// minutes for the Debian nixes that hold it shared to finish.
func lockDebianStore(t *testing.T) (unlock func()) {
	t.Helper()
	f, err := os.Open(filepath.Join(debianNixDB, "big-lock"))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			t.Fatalf("lock %s/big-lock: %v", debianNixDB, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// snapshot is each file of dir with its size, time and sha256.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if f, err := os.Open(filepath.Join(dir, e.Name())); err == nil {
			io.Copy(h, f)
			f.Close()
		}
		out[e.Name()] = fmt.Sprintf("%d bytes, %s, sha256 %s", info.Size(), info.ModTime().Format(time.RFC3339Nano), hex.EncodeToString(h.Sum(nil))[:16])
	}
	if len(out) == 0 {
		t.Fatalf("%s is empty", dir)
	}
	return out
}
