package nixeval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// A run's folder (pool.dir) holds podroles' Nix files, the request and
// the workers' bells and tasks. A run that ends however it ends, SIGKILL
// included, leaves nothing behind for good: it holds a lock on the
// folder's lock file while it lives, which the kernel lets go of with the
// process, and the next run removes every folder whose lock is free.

// runDirPrefix starts the name of a run's folder in the temporary folder.
const runDirPrefix = "podroles-eval-"

// runLock is the lock file in a run's folder.
const runLock = "lock"

// makeRunDir makes a run's folder and takes its lock, which the run holds
// until it has removed the folder (the caller closes lock then).
func makeRunDir() (dir string, lock *os.File, err error) {
	dir, err = os.MkdirTemp("", runDirPrefix)
	if err != nil {
		// The folder is TMPDIR's, or /tmp: name the variable to fix.
		if tmp := os.Getenv("TMPDIR"); tmp != "" {
			return "", nil, fmt.Errorf("TMPDIR %s: %w; set TMPDIR to a folder podroles may write, or unset it for /tmp", tmp, unwrapPath(err))
		}
		return "", nil, err
	}
	// The lock is taken under another name, then renamed: a file named
	// lock is held from the start, and the next run never takes a run
	// that is about to lock its folder for a dead one.
	lock, err = os.CreateTemp(dir, "."+runLock+"-")
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		if err == nil {
			err = os.Rename(lock.Name(), filepath.Join(dir, runLock))
		}
		if err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return dir, lock, nil
}

// removeDeadRuns removes the folders that ended runs left in the
// temporary folder, and ends their workers that still wait for a task.
// A folder of a live run, of another user, or of a podroles that took no
// lock is left alone.
func removeDeadRuns() {
	tmp := os.TempDir()
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), runDirPrefix) {
			removeIfDead(filepath.Join(tmp, e.Name()))
		}
	}
}

// removeIfDead removes dir when no process holds its lock.
func removeIfDead(dir string) {
	lock, err := os.Open(filepath.Join(dir, runLock))
	if err != nil {
		return
	}
	defer lock.Close()
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return // held: the run lives
	}
	// The kernel ends a worker with podroles (its parent-death signal),
	// but not a nix that a --nix wrapper started as its own child: such
	// a nix waits in the open of its next bell for good. Opening the bell
	// for reading and writing, which never blocks, lets that open return;
	// the task it then reads is gone with the folder, and nix exits.
	tasks, _ := filepath.Glob(filepath.Join(dir, "worker-*", "task-*.json"))
	for _, t := range tasks {
		os.Remove(t)
	}
	var bells []*os.File
	paths, _ := filepath.Glob(filepath.Join(dir, "worker-*", "bell-*"))
	for _, p := range paths {
		if f, err := os.OpenFile(p, os.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
			bells = append(bells, f)
		}
	}
	os.RemoveAll(dir)
	for _, f := range bells {
		f.Close()
	}
}

// unwrapPath is err without the path that a *fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
