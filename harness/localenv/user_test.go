package localenv

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/servers"
)

// TestEnvUpAndDownAsAUser: a user who is not root runs env up in a folder
// that mktemp -d made (the user's alone), every server runs as that user,
// the folder keeps its mode, and the same user's env down stops them all.
// Root becomes nobody for it; as a user, the test runs as that user.
func TestEnvUpAndDownAsAUser(t *testing.T) {
	bin, err := (&site{}).podroles()
	if err != nil {
		t.Fatal(err)
	}
	as := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	if os.Geteuid() == 0 {
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(nobody.Uid)
		gid, _ := strconv.Atoi(nobody.Gid)
		as = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "podroles-user-env-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(as.Uid), int(as.Gid)); err != nil {
		t.Fatal(err)
	}
	// Whatever the user's env down left, stopped by its PID.
	t.Cleanup(func() {
		if procs, err := procgroup.Load(dir); err == nil {
			for _, p := range procs {
				p.Stop(5 * time.Second)
			}
		}
		os.RemoveAll(dir)
	})
	// The programs, where the user can run them: a checkout under root's
	// home (as in CI) is not the user's to enter.
	bin = reachable(t, as, bin)
	childEnv := []string{PodrolesEnv + "=" + bin}
	if d := os.Getenv(servers.DirEnv); d != "" {
		own := openDir(t)
		for _, name := range []string{"vault", "authelia"} {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				place(t, filepath.Join(d, name), filepath.Join(own, name))
			}
		}
		childEnv = append(childEnv, servers.DirEnv+"="+own)
	}
	podroles := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/"
		cmd.Env = append(append(os.Environ(), "HOME="+dir), childEnv...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: as}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := podroles("env", "up", "--dir", dir, "--loopback", RandomLoopback())
	if err != nil || !strings.Contains(out, "environment up in") {
		t.Fatalf("env up as uid %d: %v\n%s", as.Uid, err, out)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the folder: %v, mode %v: env up must not loosen it", err, info.Mode())
	}
	procs, err := procgroup.Load(dir)
	if err != nil || len(procs) == 0 {
		t.Fatalf("the servers env up recorded: %v, %d", err, len(procs))
	}
	for _, p := range procs {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join("/proc", strconv.Itoa(p.PID)), &st); err != nil || st.Uid != as.Uid {
			t.Errorf("%s (pid %d) runs as uid %d (%v), not the user's %d", p.Name, p.PID, st.Uid, err, as.Uid)
		}
	}
	if out, err := podroles("env", "down", "--dir", dir); err != nil {
		t.Fatalf("env down as uid %d: %v\n%s", as.Uid, err, out)
	}
	for _, p := range procs {
		if !p.WaitGone(5 * time.Second) {
			t.Errorf("%s (pid %d) still runs after env down", p.Name, p.PID)
		}
	}
}

// reachable is path if the user as can run it, else a copy the user can.
func reachable(t *testing.T, as *syscall.Credential, path string) string {
	t.Helper()
	check := exec.Command("/bin/sh", "-c", `test -x "$0"`, path)
	check.SysProcAttr = &syscall.SysProcAttr{Credential: as}
	if check.Run() == nil {
		return path
	}
	own := openDir(t)
	to := filepath.Join(own, filepath.Base(path))
	place(t, path, to)
	return to
}

// place puts the program from at to: a hard link where the file system
// allows it, else a copy.
func place(t *testing.T, from, to string) {
	t.Helper()
	if os.Link(from, to) == nil {
		return
	}
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// openDir is a folder that every user may enter (t.TempDir's parent is the
// test's alone), removed when the test ends.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "podroles-programs-")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
