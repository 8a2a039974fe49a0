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

	"github.com/fediversity/podroles/vmtests/procgroup"
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
	podroles := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = "/"
		cmd.Env = append(os.Environ(), "HOME="+dir)
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
