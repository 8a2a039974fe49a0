package nixeval

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killedRunEnv names, for TestKilledRunChild, the folder of the nodes to
// evaluate; killedRunNixEnv the nix to evaluate them with.
const (
	killedRunEnv    = "PODROLES_TEST_KILLED_RUN"
	killedRunNixEnv = "PODROLES_TEST_KILLED_RUN_NIX"
)

// TestKilledRunChild is the run that the tests below kill: run by them
// alone (in a process of its own), it evaluates blocked.nix, which never
// ends, and quick.nix in two workers, and says on stdout when a node is
// done.
func TestKilledRunChild(t *testing.T) {
	dir := os.Getenv(killedRunEnv)
	if dir == "" {
		t.Skip("run by TestKilledRun and TestLaterRunEndsAnOrphanedWorker only")
	}
	ev := &Evaluator{Nix: os.Getenv(killedRunNixEnv), Jobs: 2, Progress: func(p Progress) {
		if p.Phase == "evaluating" && p.Done > 0 {
			fmt.Printf("done %d\n", p.Done)
		}
	}}
	ev.Extract(context.Background(), mustSources(t, FileSource, filepath.Join(dir, "blocked.nix"), filepath.Join(dir, "quick.nix")))
	t.Fatal("the evaluation of blocked.nix ended")
}

// killedRun is a run of TestKilledRunChild with nix, in the temporary
// folder tmp, stopped in the middle of blocked.nix with quick.nix done.
type killedRun struct {
	cmd *exec.Cmd
	// workers are the process groups of its workers.
	workers []int
	// dir is its folder (rundir.go).
	dir string
	// never is the FIFO that blocked.nix waits on for good.
	never string
}

// startKilledRun starts a run of TestKilledRunChild, and returns once it is
// in the middle of blocked.nix and done with quick.nix. Whatever the run
// and its workers leave is killed when the test ends.
func startKilledRun(t *testing.T, nix, tmp string) *killedRun {
	if runtime.GOOS != "linux" {
		t.Skip("reads the processes from Linux's /proc")
	}
	dir, started := blockingNode(t)
	if err := os.WriteFile(filepath.Join(dir, "quick.nix"), []byte(emptyNode), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &killedRun{never: filepath.Join(dir, "never")}
	r.cmd = exec.Command(os.Args[0], "-test.run=^TestKilledRunChild$", "-test.count=1")
	r.cmd.Env = append(os.Environ(), killedRunEnv+"="+dir, killedRunNixEnv+"="+nix, "TMPDIR="+tmp)
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		r.cmd.Wait()
		for _, g := range r.workers {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	done := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if s.Text() == "done 1" {
				done <- true
			}
		}
		close(done)
	}()
	waitOpened(t, started)
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("the run ended before quick.nix was done")
		}
	case <-time.After(time.Minute):
		t.Fatal("quick.nix was not done within a minute")
	}
	// A worker is a child of the run that leads a process group.
	waitFor(t, "two workers", func() bool {
		r.workers = nil
		for _, p := range processes() {
			if p.ppid == r.cmd.Process.Pid && p.pgrp == p.pid {
				r.workers = append(r.workers, p.pid)
			}
		}
		return len(r.workers) == 2
	})
	runs, _ := filepath.Glob(filepath.Join(tmp, runDirPrefix+"*"))
	if len(runs) != 1 {
		t.Fatalf("folders of runs %q, want the run's own", runs)
	}
	r.dir = runs[0]
	return r
}

// kill kills the run (SIGKILL, which it cannot handle).
func (r *killedRun) kill(t *testing.T) {
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
}

// left are the live processes of the run's worker groups.
func (r *killedRun) left() []int {
	var pids []int
	for _, g := range r.workers {
		more, _ := processGroup(g)
		pids = append(pids, more...)
	}
	return pids
}

// TestKilledRun: a run killed with SIGKILL in the middle of a node ends its
// workers with it (the kernel's parent-death signal), the busy one and the
// idle one, and the next run removes the folder that it left; a live run's
// folder is left alone.
func TestKilledRun(t *testing.T) {
	nix := requireNix(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := startKilledRun(t, nix, tmp)

	removeDeadRuns()
	if _, err := os.Stat(r.dir); err != nil {
		t.Fatalf("the folder of a live run was removed: %v", err)
	}
	r.kill(t)
	waitFor(t, "the workers to end with the run", func() bool { return len(r.left()) == 0 })
	if _, err := os.Stat(r.dir); err != nil {
		t.Fatalf("the killed run left no folder, which the test is for: %v", err)
	}

	next := mustSources(t, FileSource, filepath.Join(filepath.Dir(r.never), "quick.nix"))
	if _, err := extract(t, evaluator(t), next); err != nil {
		t.Fatal(err)
	}
	if runs, _ := filepath.Glob(filepath.Join(tmp, runDirPrefix+"*")); len(runs) != 0 {
		t.Errorf("after the next run, folders of runs %q are left", runs)
	}
}

// TestLaterRunEndsAnOrphanedWorker: a nix that a --nix wrapper started as
// its own child gets no parent-death signal, and outlives a killed run,
// waiting for a task or in the middle of one; the next run lets the one
// that waits end, and the other ends when it looks for its next task.
func TestLaterRunEndsAnOrphanedWorker(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	wrapper := filepath.Join(t.TempDir(), "nix")
	script := "#!/bin/sh\n" + requireNix(t) + " \"$@\"\nexit $?\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := startKilledRun(t, wrapper, tmp)
	r.kill(t)
	waitFor(t, "the wrappers to end with the run", func() bool {
		for _, p := range processes() {
			if slices.Contains(r.workers, p.pid) {
				return false
			}
		}
		return true
	})
	if len(r.left()) != 2 {
		t.Fatalf("processes %v outlived the run, want the two nix of the wrappers, which the test is for", r.left())
	}

	next := mustSources(t, FileSource, filepath.Join(filepath.Dir(r.never), "quick.nix"))
	if _, err := extract(t, evaluator(t), next); err != nil {
		t.Fatal(err)
	}
	if runs, _ := filepath.Glob(filepath.Join(tmp, runDirPrefix+"*")); len(runs) != 0 {
		t.Errorf("after the next run, folders of runs %q are left", runs)
	}
	waitFor(t, "the nix that waited for a task to end", func() bool { return len(r.left()) == 1 })
	waitOpened(t, r.never)
	waitFor(t, "the nix that was in the middle of a node to end", func() bool { return len(r.left()) == 0 })
}

// waitFor polls cond until it holds, and fails the test after 30 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
	}
}

// process is a live process of /proc.
type process struct{ pid, ppid, pgrp int }

// processes lists the live processes (not the zombies).
func processes() []process {
	entries, _ := os.ReadDir("/proc")
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil || dead(stat) {
			continue
		}
		// Fields 4 and 5, after the name in parentheses.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		out = append(out, process{pid, ppid, pgrp})
	}
	return out
}
