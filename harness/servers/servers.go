// Package servers finds the servers that make servers builds from the Go
// module proxy. They are Vault, Authelia, etcd, the Kubernetes commands
// and KWOK, each built from a wrapper module of its own under the
// repository's servers/. It finds them in the folder they are built
// into, which PODROLES_SERVERS names or make recorded in the
// machine-wide cache; elsewhere, on PATH (a dev shell of the flake's).
// It also builds this module's own programs for tests that run without
// make's bin/ (BuildOwn).
package servers

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// DirEnv names the folder of the servers that make servers builds.
const DirEnv = "PODROLES_SERVERS"

// CacheDir is the machine-wide cache that make builds into,
// PODROLES_CACHE: /var/cache/podroles for root, ~/.cache/podroles for
// others, as the Makefile picks it.
func CacheDir() string {
	if dir := os.Getenv("PODROLES_CACHE"); dir != "" {
		return dir
	}
	if os.Geteuid() == 0 {
		return "/var/cache/podroles"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "podroles")
}

// Record is the file where make records the folder of the servers it
// built, for podroles run outside make.
func Record() string { return filepath.Join(CacheDir(), "servers.json") }

// Dir is the folder of the built servers: $PODROLES_SERVERS, else the
// one that make recorded in the machine-wide cache, else "".
func Dir() string {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	data, err := os.ReadFile(Record())
	if err != nil {
		return ""
	}
	var record struct{ Bin string }
	if json.Unmarshal(data, &record) != nil {
		return ""
	}
	return record.Bin
}

// Find looks for a built server in Dir, then in PATH, and returns ""
// where it is in neither.
func Find(name string) string {
	if dir := Dir(); dir != "" {
		if p := filepath.Join(dir, name); IsExecutable(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

// IsExecutable says p is a file that someone may run.
func IsExecutable(p string) bool {
	info, err := os.Stat(p)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}

// BuildOwn builds a static program of this module (pkg, an import path)
// into dir/name, for a test process that runs without make's bin/. Each
// process builds (from Go's cache) into a file of its own and renames it
// into place, so that processes that build at once never run half a file.
func BuildOwn(pkg, dir, name string, flags ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, name)
	tmp := fmt.Sprintf("%s.%d", out, os.Getpid())
	cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", tmp, pkg)...)
	// Static, as make builds it: it runs as it is in images of any libc.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if msg, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build %s: %v: %s", name, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return out, nil
}
