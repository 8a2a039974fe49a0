package nixeval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A worker is one long-lived `nix eval` of serve.nix that evaluates tasks
// one after the other (serve.nix says how it is fed). It runs in a process
// group of its own, so that whatever nix starts (git, for a flake) ends
// with it, and ends with podroles, however podroles ends (startTiedToUs).
type worker struct {
	cmd *exec.Cmd
	// dir is the worker's folder: its bells and tasks.
	dir  string
	mark string // the answer's prefix on stderr
	next int    // the number of the next task

	lines  chan []byte   // stderr, line by line; closed at its end
	exited chan struct{} // closed when the process has exited
	// waitErr is the process's exit, once exited is closed.
	waitErr error
	// peakRSS is the process's high-water mark of resident memory, once
	// exited is closed.
	peakRSS int64
	// dead is set once the worker is stopped or found exited.
	dead bool
}

// workerDirEnv names the worker's folder for serve.nix.
const workerDirEnv = "PODROLES_WORKER_DIR"

// stopGrace is how long a worker that was asked to stop has before its
// process group is killed.
const stopGrace = 5 * time.Second

// startWorker starts a worker of the program in programDir.
func (e *Evaluator) startWorker(programDir, dir, mark string) (*worker, error) {
	path, err := e.nixPath()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "bell-0"), 0o600); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	// stderr is a pipe of our own, not one that exec copies from: when nix
	// dies, the group is killed first and the pipe then read to its end,
	// whatever else of the group held it open.
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	cmd := exec.Command(path, nixArgs(programDir, "eval", "--json", "--impure", "--expr", evalExpr("serve.nix"))...)
	cmd.Env = append(os.Environ(), evalDirEnv+"="+programDir, workerDirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = wr
	if err := startTiedToUs(cmd); err != nil {
		r.Close()
		wr.Close()
		return nil, fmt.Errorf("worker: start %s: %w", e.nixName(), err)
	}
	wr.Close()
	w := &worker{cmd: cmd, dir: dir, mark: tracePrefix + mark + " ", lines: make(chan []byte, 64), exited: make(chan struct{})}
	go func() {
		defer close(w.lines)
		defer r.Close()
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				w.lines <- bytes.TrimSuffix(line, []byte("\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		w.waitErr = cmd.Wait()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			w.peakRSS = int64(ru.Maxrss) * 1024 // KiB on Linux
			if runtime.GOOS == "darwin" {
				w.peakRSS = int64(ru.Maxrss) // bytes
			}
		}
		// Whatever nix left in its group goes with it.
		killGroup(cmd.Process.Pid)
		close(w.exited)
	}()
	return w, nil
}

// tracePrefix starts each line that builtins.trace prints.
const tracePrefix = "trace: "

// taskFailed is a task that nix did not answer: what it printed on stderr
// while it worked on the task, and how it ended.
type taskFailed struct {
	stderr []byte
	// err is the process's exit (an *exec.ExitError), or ctx's error.
	err error
	// signal is the signal that killed nix, when it was not podroles.
	signal syscall.Signal
}

func (f *taskFailed) Error() string { return f.err.Error() }

// do gives the worker a task and returns its answer, the JSON value
// serve.nix answered with, and what else nix printed on stderr meanwhile
// (warnings). A failed task returns a *taskFailed, and the worker is dead.
func (w *worker) do(ctx context.Context, task any) (json.RawMessage, []byte, error) {
	n := w.next
	w.next++
	data, err := json.Marshal(task)
	if err == nil {
		err = os.WriteFile(filepath.Join(w.dir, "task-"+strconv.Itoa(n)+".json"), data, 0o600)
	}
	if err == nil {
		// The bell of the next task exists before nix can look for it.
		err = syscall.Mkfifo(filepath.Join(w.dir, "bell-"+strconv.Itoa(n+1)), 0o600)
	}
	if err != nil {
		// nix waits for a task it will never get.
		w.kill()
		w.dead = true
		return nil, nil, fmt.Errorf("worker: %w", err)
	}
	rang := w.ring(n)
	defer func() {
		<-rang
		os.Remove(filepath.Join(w.dir, "bell-"+strconv.Itoa(n)))
		os.Remove(filepath.Join(w.dir, "task-"+strconv.Itoa(n)+".json"))
	}()

	var stderr bytes.Buffer
	answer := func(line []byte) (json.RawMessage, bool) {
		rest, ok := bytes.CutPrefix(line, []byte(w.mark))
		if !ok {
			return nil, false
		}
		var a struct {
			Task  int             `json:"task"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(rest, &a) != nil || a.Task != n {
			return nil, false
		}
		return a.Value, true
	}
	lines := w.lines
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				// stderr ended: nix exited (or closed it), and failed.
				lines = nil
				continue
			}
			if v, ok := answer(line); ok {
				return v, stderr.Bytes(), nil
			}
			stderr.Write(line)
			stderr.WriteByte('\n')
			continue
		case <-ctx.Done():
			w.kill()
		case <-w.exited:
		}
		// nix has exited: read what it printed to the end (its group is
		// killed, so every writer of the pipe is gone).
		for line := range w.lines {
			if v, ok := answer(line); ok && ctx.Err() == nil {
				w.dead = true
				return v, stderr.Bytes(), nil
			}
			stderr.Write(line)
			stderr.WriteByte('\n')
		}
		w.dead = true
		<-w.exited
		failed := &taskFailed{stderr: stderr.Bytes(), err: w.waitErr}
		if ctx.Err() != nil {
			failed.err = ctx.Err()
		} else if ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			failed.signal = ws.Signal()
		} else if w.waitErr == nil {
			failed.err = errors.New("nix exited before it answered")
		}
		return nil, failed.stderr, failed
	}
}

// ring opens bell-n for writing, which returns once nix opens it for
// reading, and closes it again: nix then reads task n. The channel is
// closed when the ring is over, also when nix died before it read the bell.
func (w *worker) ring(n int) <-chan struct{} {
	bell := filepath.Join(w.dir, "bell-"+strconv.Itoa(n))
	done := make(chan struct{})
	opened := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(bell, os.O_WRONLY, 0)
		close(opened)
		if err == nil {
			f.Close()
		}
	}()
	go func() {
		select {
		case <-opened:
		case <-w.exited:
			// Nobody will read the bell: open it for reading ourselves,
			// which lets the open for writing return.
			if f, err := os.OpenFile(bell, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
				<-opened
				f.Close()
			}
		}
	}()
	return done
}

// stop asks the worker to end (the task "stop"), gives it stopGrace, then
// kills its group, and returns once it has exited.
func (w *worker) stop() {
	if !w.dead {
		w.dead = true
		n := w.next
		w.next++
		if os.WriteFile(filepath.Join(w.dir, "task-"+strconv.Itoa(n)+".json"), []byte(`{"op":"stop"}`), 0o600) == nil {
			rang := w.ring(n)
			select {
			case <-w.exited:
			case <-time.After(stopGrace):
			}
			w.kill()
			<-rang
		}
	}
	w.kill()
	for range w.lines {
	}
	<-w.exited
	os.RemoveAll(w.dir)
}

// kill kills the worker's process group.
func (w *worker) kill() {
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
}

// killGroup kills process group pgid and returns once none of its
// processes runs any more (or after a few seconds, for a process that the
// kernel holds in an uninterruptible sleep).
func killGroup(pgid int) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(-pgid, syscall.SIGKILL) != nil {
			return // no process is left in the group
		}
		if pids, _ := processGroup(pgid); len(pids) == 0 {
			return
		}
	}
}

// processGroup lists the live processes of group pgid from /proc (not the
// dead ones that wait for their parent to read their exit), and their
// resident memory together: nix and whatever it started.
func processGroup(pgid int) (pids []int, rss int64) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		if group, pages, ok := parseStat(stat); ok && group == pgid && !dead(stat) {
			pids = append(pids, pid)
			rss += pages * int64(os.Getpagesize())
		}
	}
	return pids, rss
}

// dead says whether the state of a /proc/PID/stat is a zombie's (Z) or a
// dead process's (X).
func dead(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

// parseStat reads the process group (field 5) and the resident pages
// (field 24) of /proc/PID/stat, whose second field, the command's name in
// parentheses, may hold spaces and parentheses itself.
func parseStat(stat []byte) (pgrp int, rss int64, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3, the state.
	if len(fields) < 22 {
		return 0, 0, false
	}
	pgrp, err1 := strconv.Atoi(fields[2])
	rss, err2 := strconv.ParseInt(fields[21], 10, 64)
	return pgrp, rss, err1 == nil && err2 == nil
}
