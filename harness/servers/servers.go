// Package servers finds the servers that make servers builds from the Go
// module proxy (Vault, Authelia, etcd, the Kubernetes commands, KWOK), each
// from a wrapper module of its own under the repository's servers/, into
// the folder that PODROLES_SERVERS names; elsewhere, on PATH (a dev shell
// of the flake's).
package servers

import (
	"os"
	"os/exec"
	"path/filepath"
)

// DirEnv names the folder of the servers that make servers builds.
const DirEnv = "PODROLES_SERVERS"

// Find looks for a built server in $PODROLES_SERVERS, then in PATH, and
// returns "" where it is in neither.
func Find(name string) string {
	if dir := os.Getenv(DirEnv); dir != "" {
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
