package kubenode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Process is a program the node started, as the host state records it:
// stopped by its PID, and only while that PID is still the same process.
type Process struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTime is field 22 of /proc/PID/stat: a PID reused by another
	// process is never signalled.
	StartTime string `json:"startTime"`
	Log       string `json:"log,omitempty"`

	exited chan struct{} // closed when our child is reaped
}

// startProcess starts argv with its output in log. An attached process
// dies with the process that started it, even when that one is killed; a
// detached one (env up) outlives it.
func startProcess(name string, argv []string, log string, env []string, detached bool) (*Process, error) {
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = filepath.Dir(log)
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, StartTime: startTime(cmd.Process.Pid), Log: log, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// startTime reads field 22 of /proc/PID/stat, or "" when the process is
// gone.
func startTime(pid int) string {
	fields := statFields(pid)
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// statFields are the fields of /proc/PID/stat after the command's name
// (which is in parentheses and may hold spaces).
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// Running says p still runs: the same process, not a zombie.
func (p *Process) Running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
		}
	}
	fields := statFields(p.PID)
	return len(fields) >= 20 && fields[19] == p.StartTime && fields[0] != "Z" && fields[0] != "X"
}

// Stop sends SIGTERM, waits grace, then kills p's process group. A p
// found gone is left alone: its PID may be another's by now.
func (p *Process) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.Name, p.PID, err)
	}
	if waitGone(p.Running, grace) {
		return nil
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	syscall.Kill(p.PID, syscall.SIGKILL)
	if waitGone(p.Running, 5*time.Second) {
		return nil
	}
	return fmt.Errorf("stop %s: pid %d still runs after SIGKILL", p.Name, p.PID)
}

// lastLines is the end of p's log, on one line, to say why it failed.
func (p *Process) lastLines(n int) string {
	b, _ := os.ReadFile(p.Log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// waitGone polls running until it is false or within has passed: there is
// nothing to wait on for a process that is not our child.
func waitGone(running func() bool, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if !running() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay)
	}
}
