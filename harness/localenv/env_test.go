package localenv_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/inventory"
)

func TestUpDown(t *testing.T) {
	start := time.Now()
	env := testenv.NewEnv(t, localenv.Options{})
	t.Logf("up in %s", time.Since(start))
	if _, err := inventory.Load(env.Inventory, nil); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(env.Dir + "/logs"); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("logs/: %v: servers may print secrets there, so it is the owner's alone", err)
	}
	for _, name := range []string{"secrets/bind-password", "secrets/postgres-dsn", "tls/server.key", "logs/postgres.log"} {
		info, err := os.Stat(env.Dir + "/" + name)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v: secrets are the owner's alone", name, err, info.Mode())
		}
	}
	// The folder, the owner's alone as mktemp -d makes it, stays so; as
	// root, PostgreSQL's user gets a folder of its own outside it.
	if info, err := os.Stat(env.Dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the environment's folder: %v, mode %v: env up must not loosen it", err, info.Mode())
	}
	outside, linkErr := os.Readlink(filepath.Join(env.Dir, "postgres"))
	if os.Geteuid() == 0 {
		if info, err := os.Stat(outside); linkErr != nil || err != nil || info.Mode().Perm() != 0o700 || info.Sys().(*syscall.Stat_t).Uid == 0 {
			t.Errorf("as root, postgres/ links to a folder of PostgreSQL's user: %v, %v", linkErr, err)
		}
	}
	procs := recorded(t, env.Dir)
	if err := env.Down(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, procs)
	if outside != "" {
		if _, err := os.Stat(outside); !os.IsNotExist(err) {
			t.Errorf("env down left PostgreSQL's folder %s: %v", outside, err)
		}
	}
}

// recorded are the processes an environment in dir recorded.
func recorded(t *testing.T, dir string) []*procgroup.Proc {
	t.Helper()
	procs, err := procgroup.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return procs
}

func requireGone(t *testing.T, procs []*procgroup.Proc) {
	t.Helper()
	for _, p := range procs {
		if !p.WaitGone(5 * time.Second) {
			t.Errorf("%s (pid %d) still runs", p.Name, p.PID)
			syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

func TestDownByDirAndNoSecondUp(t *testing.T) {
	dir := testenv.TempDir(t, "podroles-env-")
	opts := localenv.Options{Dir: dir, Loopback: localenv.RandomLoopback(), Detached: true}
	env, err := localenv.Up(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Down()
	procs := recorded(t, dir)
	if _, err := localenv.Up(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "already has running servers") {
		t.Errorf("a second up in the same folder: %v", err)
	}
	if err := localenv.Down(dir); err != nil {
		t.Fatal(err)
	}
	requireGone(t, procs)
	if err := localenv.Down(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no environment was started there") {
		t.Errorf("down where nothing ran: %v", err)
	}
}

func TestLoopbackOnly(t *testing.T) {
	_, err := localenv.Up(context.Background(), localenv.Options{Dir: t.TempDir(), Loopback: "192.168.1"})
	if err == nil || !strings.Contains(err.Error(), `env: loopback "192.168.1": give the first three octets of loopback addresses`) {
		t.Fatalf("err = %v", err)
	}
}

func TestPortTaken(t *testing.T) {
	loopback := localenv.RandomLoopback()
	l, err := net.Listen("tcp", loopback+".2:6360")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, err = localenv.Up(context.Background(), localenv.Options{Dir: t.TempDir(), Loopback: loopback})
	if err == nil || !strings.Contains(err.Error(), loopback+".2:6360 is taken") {
		t.Fatalf("err = %v", err)
	}
}

// TestKilledTestLeavesNothing starts an environment in a child process,
// kills that process with SIGKILL, as a test run that is interrupted hard,
// and checks that its servers die with it.
func TestKilledTestLeavesNothing(t *testing.T) {
	if os.Getenv("PODROLES_ENV_HELPER") != "" {
		dir := os.Getenv("PODROLES_ENV_HELPER")
		if _, err := localenv.Up(context.Background(), localenv.Options{Dir: dir, Loopback: localenv.RandomLoopback()}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		procs, _ := procgroup.Load(dir)
		for _, p := range procs {
			fmt.Println("pid", p.PID, p.StartTime, p.Name)
		}
		fmt.Println("ready")
		select {}
	}
	dir := testenv.TempDir(t, "podroles-env-")
	cmd, sc := startHelper(t, "TestKilledTestLeavesNothing", "PODROLES_ENV_HELPER="+dir)
	var procs []*procgroup.Proc
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) == 4 && f[0] == "pid" {
			var pid int
			fmt.Sscan(f[1], &pid)
			procs = append(procs, &procgroup.Proc{PID: pid, StartTime: f[2], Name: f[3]})
		}
		if f[0] == "ready" || f[0] == "error" {
			if f[0] == "error" {
				t.Fatal(sc.Text())
			}
			break
		}
	}
	if len(procs) < 4 {
		t.Fatalf("the helper started %d servers", len(procs))
	}
	outside, _ := os.Readlink(filepath.Join(dir, "postgres"))
	cmd.Process.Kill()
	cmd.Wait()
	requireGone(t, procs)
	// What the killed helper left on disk, env down removes: PostgreSQL's
	// folder outside the environment's, as root.
	if err := localenv.Down(dir); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(outside); outside != "" && !os.IsNotExist(err) {
		t.Errorf("env down left %s: %v", outside, err)
	}
}

// startHelper runs this test binary's test as a helper process with a
// variable that makes it the helper, and returns its output, line by
// line. The helper dies with the test; the test may kill it sooner.
func startHelper(t *testing.T, test, variable string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), variable)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

// ChangePassword goes through the password modify operation, the one
// way lldap takes a password over LDAP: afterwards the new password binds
// at every replica and the old one no longer does.
func TestChangePassword(t *testing.T) {
	env := testenv.NewEnv(t, localenv.Options{})
	secret, err := os.ReadFile(filepath.Join(env.Dir, "secrets", "bind-password"))
	if err != nil {
		t.Fatal(err)
	}
	old := strings.TrimSpace(string(secret))
	inv, err := inventory.Load(env.Inventory, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Servers().ChangePassword(context.Background(), "authelia-bind", "a-new-password"); err != nil {
		t.Fatal(err)
	}
	dn := inv.LDAP.BindDN
	for i, pod := range inv.Roles["lldap"].Pods {
		conn, err := ldap.DialURL(fmt.Sprintf("ldap://%s", net.JoinHostPort(pod.Address, fmt.Sprint(localenv.PortLDAP))))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Bind(dn, "a-new-password"); err != nil {
			t.Errorf("slapd-%d: the new password: %v", i, err)
		}
		if err := conn.Bind(dn, old); !ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
			t.Errorf("slapd-%d: the old password: %v, want invalid credentials", i, err)
		}
		conn.Close()
	}
}
