package localenv

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/servers"
)

// podCommand runs argv as the service of pod, of role: through podroles'
// pod supervisor, restarting it when a secret with restart changes, where
// the role has secrets; as it is where it has none.
func (s *site) podCommand(pod, role, secretsDir string, secrets map[string]facts.Secret, envFiles []string, argv []string) ([]string, error) {
	if s.tools.vault == "" {
		return argv, nil
	}
	bin, err := s.podroles()
	if err != nil {
		return nil, err
	}
	cmd := []string{bin, "pod", "--name", pod, "--status", s.podStatusFile(pod)}
	for _, file := range slices.Sorted(maps.Keys(secrets)) {
		if (secrets[file].Restart || s.Faults.RestartOnEverySecret) && !s.noRestartOn(role, file) {
			cmd = append(cmd, "--restart-on", filepath.Join(secretsDir, file))
		}
	}
	if s.Faults.RestartWithSidecar {
		cmd = append(cmd, "--restart-on", s.sidecarStatusFile(pod))
	}
	for _, file := range envFiles {
		cmd = append(cmd, "--env-file", filepath.Join(secretsDir, file))
	}
	return append(append(cmd, "--"), argv...), nil
}

// noRestartOn says a test broke the restart of role's pods for file.
func (s *site) noRestartOn(role, file string) bool {
	return slices.Contains(s.Faults.NoRestartOn, role) || slices.Contains(s.Faults.NoRestartOn, role+"/"+file) ||
		role == workerRole && s.Faults.ServiceBeforeSecrets
}

// sidecarCommand runs argv, a pod's OpenBao agent, under podroles' pod
// supervisor, as a kubelet runs a sidecar: started again when it exits,
// and when a new value is written into the pod's sidecar restart file (as
// `kill 1` in its container would end it), its restarts counted in the
// pod's sidecar status file.
func (s *site) sidecarCommand(pod string, argv []string) ([]string, error) {
	bin, err := s.podroles()
	if err != nil {
		return nil, err
	}
	return append([]string{bin, "pod", "--name", pod + "-" + sidecarContainer, "--status", s.sidecarStatusFile(pod),
		"--restart-on", s.sidecarRestartFile(pod), "--"}, argv...), nil
}

// sidecarContainer names a pod's sidecar, as the plan does.
const sidecarContainer = "secrets"

// PodrolesEnv names a podroles binary for the pods, when the process that
// starts the environment is not podroles itself (a test).
const PodrolesEnv = "PODROLES_BIN"

var built struct {
	once sync.Once
	path string
	err  error
}

// podroles returns the podroles binary: the option, $PODROLES_BIN, this
// process if it is podroles, or one built once for this process.
func (s *site) podroles() (string, error) {
	if s.Podroles != "" {
		return s.Podroles, nil
	}
	if p := os.Getenv(PodrolesEnv); p != "" {
		return filepath.Abs(p)
	}
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "podroles" {
		return exe, nil
	}
	built.once.Do(func() {
		// Static: the supervisor runs as it is in images of any libc
		// (lldap's is Alpine's musl); a dynamic one would run through
		// the host's loader (hostProgram).
		built.path, built.err = servers.BuildOwn("github.com/fediversity/podroles/cmd/podroles", filepath.Join(os.TempDir(), "podroles-pod-bin"), "podroles")
	})
	return built.path, built.err
}
