package vmtests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is a server that the environment started, as state.json records it
// so that `env down` stops it by its PID, and only it.
type proc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// StartTime is the process's start time in /proc/PID/stat: a PID
	// reused by another process is never signalled.
	StartTime string `json:"startTime"`
	// StopSignal asks the server to stop (PostgreSQL wants SIGINT for a
	// fast shutdown).
	StopSignal syscall.Signal `json:"stopSignal"`
	Log        string         `json:"log"`

	exited chan struct{} // closed when the child is reaped, if ours
}

// server is a server the environment started: a process, or a container.
type server interface {
	// label names it, as in logs/NAME.log.
	label() string
	running() bool
	lastLines(n int) string
}

func (p *proc) label() string { return p.Name }

// startOptions say how a server runs.
type startOptions struct {
	// publish maps a port the server listens on, in a container, to the
	// loopback address of the host where it is published (containers).
	publish map[int]string
	// before are commands run first where the server runs (slapadd,
	// haproxy -c, nginx -t); one that fails stops the start.
	before [][]string
	// secretEnv sets variables from files where the server runs, so that
	// a secret reaches neither argv nor a container engine's config.
	secretEnv map[string]string
	// image is the container's own image, when not the servers' image.
	image      string
	dir        string
	env        []string
	credential *syscall.Credential
	stopSignal syscall.Signal
	// detached servers outlive the command that started them (env up);
	// attached ones die with it (tests), even when it is killed.
	detached bool
}

// start starts a server with its output in logs/NAME.log.
func (e *Env) start(ctx context.Context, name string, argv []string, opts startOptions) (*proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logPath := filepath.Join(e.Dir, "logs", name+".log")
	// Logs may hold what servers print of secrets (Vault's dev mode
	// prints its root token): the owner's alone. Servers of other users
	// (PostgreSQL) get the open file.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = opts.dir
	cmd.Env = append(os.Environ(), opts.env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	attr := &syscall.SysProcAttr{Credential: opts.credential}
	if opts.detached {
		attr.Setsid = true
	} else {
		attr.Setpgid = true
		attr.Pdeathsig = syscall.SIGKILL
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{Name: name, PID: cmd.Process.Pid, StartTime: startTime(cmd.Process.Pid), StopSignal: opts.stopSignal, Log: logPath, exited: make(chan struct{})}
	if p.StopSignal == 0 {
		p.StopSignal = syscall.SIGTERM
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	e.procs = append(e.procs, p)
	if err := e.saveState(); err != nil {
		return p, err
	}
	return p, nil
}

// startTime reads field 22 of /proc/PID/stat, or "" when the process is
// gone.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	fields := strings.Fields(string(rest))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// running reports whether p still runs: the same process, not a zombie.
func (p *proc) running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil || startTime(p.PID) != p.StartTime {
		return false
	}
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	state := strings.Fields(string(rest))
	return len(state) > 0 && state[0] != "Z" && state[0] != "X"
}

// stop asks p to stop, waits, and kills its process group if it will not.
// Whatever of the group outlives p (a child it left behind) is killed too:
// the group is the one made when p started, and while a member lives its
// ID cannot go to another process. A p found gone is left alone: its
// group may be gone and its ID reused.
func (p *proc) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	defer syscall.Kill(-p.PID, syscall.SIGKILL)
	if err := syscall.Kill(p.PID, p.StopSignal); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.waitGone(grace) {
		return nil
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	syscall.Kill(p.PID, syscall.SIGKILL)
	if p.waitGone(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("stop %s: pid %d still runs after SIGKILL", p.Name, p.PID)
}

func (p *proc) waitGone(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if !p.running() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay) // polling a PID: there is nothing to wait on for a process that is not our child
	}
}

// lastLines returns the end of a server's log, to say why it failed.
func (p *proc) lastLines(n int) string {
	b, _ := os.ReadFile(p.Log)
	return lastLines(string(b), n)
}

// lastLines returns the last n lines of text, joined on one line.
func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// errNoState is a folder where no environment was started.
var errNoState = errors.New("nothing to stop")

// state is what state.json holds.
type state struct {
	Procs      []*proc         `json:"procs"`
	Containers []*podContainer `json:"containers,omitempty"`
	Network    string          `json:"network,omitempty"`
}

func (e *Env) saveState() error {
	st := state{Procs: e.procs, Containers: e.containers}
	if e.network != nil {
		st.Network = e.network.Name
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(e.Dir, ".state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(e.Dir, "state.json"))
}

func loadState(dir string) (*state, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no state.json: no environment was started there: %w", dir, errNoState)
		}
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s/state.json: %w", dir, err)
	}
	return &s, nil
}
