// Package procgroup starts the servers of a test environment as processes
// and stops them by their PIDs. A Group records what it started in
// DIR/state.json, so that another process (podroles env down) stops them,
// and only them: a PID is signalled only while it belongs to the process
// that was started, by its start time. Servers of an attached group die
// with the process that started them, even when it is killed; those of a
// detached group outlive it. The local environment and the test control
// plane each start their servers through a Group of their own.
package procgroup

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
	"sync"
	"syscall"
	"time"

	"github.com/fediversity/podroles/internal/statefile"
)

// Group is the processes that one environment started, with their logs
// in DIR/logs and their record in DIR/state.json.
type Group struct {
	dir      string
	detached bool

	mu    sync.Mutex
	procs []*Proc
}

// New returns an empty group whose processes are recorded in dir;
// detached ones outlive the process that starts them (env up), attached
// ones die with it (tests).
func New(dir string, detached bool) *Group { return &Group{dir: dir, detached: detached} }

// Proc is a process that a group started, as state.json records it.
type Proc struct {
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

// Options say how a process runs.
type Options struct {
	Dir        string
	Env        []string
	Credential *syscall.Credential
	StopSignal syscall.Signal
}

// Start starts argv as name, with its output in logs/NAME.log, and
// records it before it returns.
func (g *Group) Start(ctx context.Context, name string, argv []string, o Options) (*Proc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	logs := filepath.Join(g.dir, "logs")
	if err := os.MkdirAll(logs, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logs, name+".log")
	// Logs may hold what servers print of secrets (Vault's dev mode
	// prints its root token): the owner's alone. Servers of other users
	// (PostgreSQL) get the open file.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	attr := &syscall.SysProcAttr{Credential: o.Credential}
	if g.detached {
		attr.Setsid = true
	} else {
		attr.Setpgid = true
		attr.Pdeathsig = syscall.SIGKILL
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, PID: cmd.Process.Pid, StartTime: StartTime(cmd.Process.Pid), StopSignal: o.StopSignal, Log: logPath, exited: make(chan struct{})}
	if p.StopSignal == 0 {
		p.StopSignal = syscall.SIGTERM
	}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.procs = append(g.procs, p)
	return p, g.save()
}

// Procs are the processes the group started, in order.
func (g *Group) Procs() []*Proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*Proc(nil), g.procs...)
}

// Find returns the process started as name, or nil.
func (g *Group) Find(name string) *Proc {
	for _, p := range g.Procs() {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// Stop stops every process of the group, last started first.
func (g *Group) Stop() error { return stopAll(g.Procs()) }

func stopAll(procs []*Proc) error {
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		errs = append(errs, procs[i].Stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// ErrNoState is a folder where no group recorded a process.
var ErrNoState = errors.New("nothing to stop")

// state is what state.json holds.
type state struct {
	Procs []*Proc `json:"procs"`
}

func (g *Group) save() error {
	return statefile.WriteJSON(filepath.Join(g.dir, "state.json"), state{Procs: g.procs}, 0o644)
}

// Load reads the processes that a group recorded in dir.
func Load(dir string) ([]*Proc, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s has no state.json: %w", dir, ErrNoState)
		}
		return nil, err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s/state.json: %w", dir, err)
	}
	return s.Procs, nil
}

// StopRecorded stops, by their PIDs, the processes that a group recorded
// in dir, last started first: env down of what another process started.
func StopRecorded(dir string) error {
	procs, err := Load(dir)
	if err != nil {
		return err
	}
	return stopAll(procs)
}

// AnyRunning says a process of procs still runs.
func AnyRunning(procs []*Proc) bool {
	for _, p := range procs {
		if p.Running() {
			return true
		}
	}
	return false
}

// StartTime reads field 22 of /proc/PID/stat, or "" when the process is
// gone.
func StartTime(pid int) string {
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

// Label names the process, as in logs/NAME.log.
func (p *Proc) Label() string { return p.Name }

// Running reports whether p still runs: the same process, not a zombie.
func (p *Proc) Running() bool {
	if p.exited != nil {
		select {
		case <-p.exited:
			return false
		default:
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID))
	if err != nil || StartTime(p.PID) != p.StartTime {
		return false
	}
	rest := b[bytes.LastIndexByte(b, ')')+1:]
	state := strings.Fields(string(rest))
	return len(state) > 0 && state[0] != "Z" && state[0] != "X"
}

// Stop asks p to stop, waits, and kills its process group if it will not.
// Whatever of the group outlives p (a child it left behind) is killed too:
// the group is the one made when p started, and while a member lives its
// ID cannot go to another process. A p found gone is left alone: its
// group may be gone and its ID reused.
func (p *Proc) Stop(grace time.Duration) error {
	if !p.Running() {
		return nil
	}
	defer syscall.Kill(-p.PID, syscall.SIGKILL)
	if err := syscall.Kill(p.PID, p.StopSignal); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", p.Name, p.PID, err)
	}
	if p.WaitGone(grace) {
		return nil
	}
	syscall.Kill(-p.PID, syscall.SIGKILL)
	syscall.Kill(p.PID, syscall.SIGKILL)
	if p.WaitGone(5 * time.Second) {
		return nil
	}
	return fmt.Errorf("stop %s: pid %d still runs after SIGKILL", p.Name, p.PID)
}

// WaitGone waits until p no longer runs, and says whether it stopped
// within the time given.
func (p *Proc) WaitGone(within time.Duration) bool {
	deadline := time.Now().Add(within)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		if !p.Running() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(delay) // polling a PID: there is nothing to wait on for a process that is not our child
	}
}

// LastLines returns the end of the process's log, to say why it failed.
func (p *Proc) LastLines(n int) string {
	b, _ := os.ReadFile(p.Log)
	return LastLines(string(b), n)
}

// LastLines returns the last n lines of text, joined on one line.
func LastLines(text string, n int) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
