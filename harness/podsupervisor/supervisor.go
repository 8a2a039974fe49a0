// Package podsupervisor runs one pod of a role as the local environment
// makes it. It runs the service, and restarts it in the same pod when a
// file of a secret with restart changes, as the spec's US1-13 asks. It
// reads environment files anew at each start. It is the small supervisor
// of our own that the OpenBao agent lacks, run by the shipped binary's
// hidden command `podroles pod`, so that it works in any image the
// binary is mounted in.
package podsupervisor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/fediversity/podroles/internal/statefile"
	"github.com/fediversity/podroles/inventory"
)

// Options run one pod of a role: its service, restarted in the same
// pod when a secret with restart changes, as the spec's US1-13 asks.
type Options struct {
	Name string
	// Status is the file the pod writes its PodStatus to.
	Status string
	// RestartOn are the files of the secrets with restart.
	RestartOn []string
	// EnvFiles are environment files (VAR=VALUE lines, the part of
	// systemd's EnvironmentFile= format that secrets' templates write: no
	// escapes, no values over several lines) whose variables the service
	// gets, read anew at each start: a credential rotated into one reaches
	// the restarted service.
	EnvFiles []string
	// Command is the service.
	Command []string
	Log     io.Writer
	// Exit makes the supervisor a container's entrypoint on a real node:
	// it runs the service once, and where the local environment's pod
	// would restart it, it stops the service and exits instead, so that
	// the kubelet restarts the container and counts the restart, as the
	// k8s method's restart does. A service that exited makes it exit
	// with the service's code (ServiceExited); a new value of a secret
	// with restart, with 0. No status file is written: the kubelet
	// reports the container's.
	Exit bool
	// TerminationLog, in Exit mode, is where the supervisor says why it
	// exits, for the kubelet's termination message (/dev/termination-log):
	// inventory.RestartMessagePrefix and the file, or the service's exit.
	TerminationLog string
}

// ServiceExited is the end of a supervisor in Exit mode whose service
// exited by itself: the container exits with the service's code.
type ServiceExited struct {
	Pod  string
	Code int
}

func (e *ServiceExited) Error() string {
	return fmt.Sprintf("pod %s: the service exited with status %d", e.Pod, e.Code)
}

// ExitCode is the code the supervisor exits with.
func (e *ServiceExited) ExitCode() int { return e.Code }

// Run runs the service until ctx ends, and restarts it when a file of
// RestartOn changes or when it exits (a container's restart policy
// Always). It is the small supervisor of our own that the OpenBao agent
// lacks: the agent writes the files, this restarts the service for the
// secrets that ask for it, and for no other.
func Run(ctx context.Context, o Options) error {
	uid := make([]byte, 8)
	rand.Read(uid)
	status := inventory.PodStatus{Pod: o.Name, UID: hex.EncodeToString(uid)}
	backoff := time.Duration(0)
	for {
		// Hashed before the service reads them: a change after this
		// restarts it, none is missed.
		seen := hashFiles(o.RestartOn)
		env, err := readEnvFiles(o.EnvFiles)
		if err != nil {
			// As a kubelet does with a container that cannot start: say
			// why, and try again ever more slowly.
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			fmt.Fprintf(o.Log, "pod %s: %v: retrying in %s\n", o.Name, err, backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			continue
		}
		cmd := exec.Command(o.Command[0], o.Command[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout, cmd.Stderr = o.Log, o.Log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("pod %s: start %s: %w", o.Name, o.Command[0], err)
		}
		status.ServicePID, status.StartedAt, status.Running = cmd.Process.Pid, time.Now(), true
		if !o.Exit {
			if err := writeStatus(o.Status, status); err != nil {
				cmd.Process.Kill()
				return err
			}
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		why, changed, crashed := waitForRestart(ctx, o.RestartOn, seen, exited)
		if ctx.Err() != nil {
			fmt.Fprintf(o.Log, "pod %s: %s\n", o.Name, why)
			stopService(cmd, exited)
			return nil
		}
		if o.Exit {
			fmt.Fprintf(o.Log, "pod %s: %s; exiting instead, for the kubelet to restart the container\n", o.Name, strings.TrimSuffix(why, ": restarting it"))
			stopService(cmd, exited)
			var end error
			message := restartMessage(changed)
			if crashed {
				e := &ServiceExited{Pod: o.Name, Code: exitOf(cmd, status.StartedAt).Code}
				end, message = e, e.Error()
			}
			if o.TerminationLog != "" {
				// The kubelet reads it once the container ended.
				if err := os.WriteFile(o.TerminationLog, []byte(message), 0o644); err != nil {
					fmt.Fprintf(o.Log, "pod %s: the termination message: %v\n", o.Name, err)
				}
			}
			return end
		}
		fmt.Fprintf(o.Log, "pod %s: %s\n", o.Name, why)
		// The service no longer runs from the moment its stop begins. Its
		// exit counts once it is recorded, with how it ended, as a
		// kubelet counts a terminated container.
		status.ServicePID, status.Running = 0, false
		if err := writeStatus(o.Status, status); err != nil {
			stopService(cmd, exited)
			return err
		}
		stopService(cmd, exited)
		status.RestartCount++
		status.Exits, status.LastExit = status.RestartCount, exitOf(cmd, status.StartedAt)
		if !crashed {
			status.LastExit.Message = restartMessage(changed)
		}
		if err := writeStatus(o.Status, status); err != nil {
			return err
		}
		// A service that keeps crashing is restarted ever more slowly, as
		// a kubelet backs off.
		if crashed && time.Since(status.StartedAt) < 10*time.Second {
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// exitOf records how the service's run ended, as a kubelet records a
// terminated container: a signal as a shell reports it.
func exitOf(cmd *exec.Cmd, started time.Time) *inventory.Exit {
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int(ws.Signal())
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	return &inventory.Exit{Code: code, Reason: reason, StartedAt: started, FinishedAt: time.Now()}
}

// restartMessage is what an exit for new values of files says: each of
// them, as the restart is one for all.
func restartMessage(files []string) string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = filepath.Base(f)
	}
	return inventory.RestartMessagePrefix + strings.Join(names, ", ")
}

// waitForRestart returns why the service must restart (files of secrets
// with restart changed, the service exited, or ctx ended), the files that
// changed, and whether it crashed.
func waitForRestart(ctx context.Context, files []string, seen map[string]string, exited <-chan struct{}) (string, []string, bool) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "stopping", nil, false
		case <-exited:
			return "the service exited: restarting it", nil, true
		case <-tick.C:
			now := hashFiles(files)
			if maps.Equal(now, seen) {
				continue
			}
			// The agent writes a credential's files one after the other:
			// restart once, when they have all settled.
			for {
				select {
				case <-ctx.Done():
					return "stopping", nil, false
				case <-tick.C:
				}
				next := hashFiles(files)
				if maps.Equal(next, now) {
					break
				}
				now = next
			}
			var changed []string
			for _, f := range files {
				if now[f] != seen[f] {
					changed = append(changed, f)
				}
			}
			if len(changed) == 0 {
				continue // changed and changed back: nothing new to restart for
			}
			return restartMessage(changed) + ": restarting the service", changed, false
		}
	}
}

// readEnvFiles reads VAR=VALUE lines from files, skipping blank lines and
// comments, and unquoting a value in matching quotes. An error names the
// file and line, never a value: they hold secrets.
func readEnvFiles(files []string) ([]string, error) {
	var env []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("environment file: %w", err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
			name, value, ok := strings.Cut(line, "=")
			name = strings.TrimSpace(name)
			if !ok || !variableName.MatchString(name) {
				return nil, fmt.Errorf("environment file %s, line %d: not VAR=VALUE", f, i+1)
			}
			value = strings.TrimSpace(value)
			if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
				value = value[1 : len(value)-1]
			}
			env = append(env, name+"="+value)
		}
	}
	return env, nil
}

// variableName is what a shell takes as a variable's name.
var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func stopService(cmd *exec.Cmd, exited <-chan struct{}) {
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

func hashFiles(files []string) map[string]string {
	out := make(map[string]string, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			out[f] = "missing"
			continue
		}
		sum := sha256.Sum256(data)
		out[f] = hex.EncodeToString(sum[:])
	}
	return out
}

func writeStatus(path string, s inventory.PodStatus) error {
	return statefile.WriteJSON(path, s, 0o644)
}
