package podsupervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/internal/synclog"
	"github.com/fediversity/podroles/inventory"
)

// The service gets an environment file's variables at each start, so that
// a credential rotated into the file reaches it once it restarts; a file
// it cannot read holds the start back, named, until it is fixed.
func TestPodEnvFiles(t *testing.T) {
	dir := t.TempDir()
	envFile, out := filepath.Join(dir, "db.env"), filepath.Join(dir, "seen")
	if err := os.WriteFile(envFile, []byte("# the credential\nDATABASE_URL=\"postgres://one@db/lldap\"\n\nOTHER=x"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &synclog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			Name: "pod-0", Status: filepath.Join(dir, "status.json"),
			RestartOn: []string{envFile}, EnvFiles: []string{envFile}, Log: log,
			Command: []string{"sh", "-c", `printf '%s %s' "$DATABASE_URL" "$OTHER" > "$0.tmp" && mv "$0.tmp" "$0" && exec sleep 60`, out},
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFile := func(want string) {
		t.Helper()
		probe := poll.Probe{Endpoint: out, Expect: want, Within: 15 * time.Second}
		if err := poll.Eventually(context.Background(), probe, func(context.Context) error {
			got, _ := os.ReadFile(out)
			if string(got) != want {
				return poll.Saw("%q", got)
			}
			return nil
		}); err != nil {
			t.Fatalf("%v; the pod said: %s", err, log.String())
		}
	}
	waitFile("postgres://one@db/lldap x")

	// A broken file: the service is stopped for the change and not started
	// again until the file is fixed; the log names the line, not the value.
	if err := os.WriteFile(envFile, []byte("DATABASE_URL=postgres://two@db/lldap\nnot a variable secret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	probe := poll.Probe{Endpoint: "the pod's log", Expect: "the broken line named", Within: 15 * time.Second}
	if err := poll.Eventually(context.Background(), probe, func(context.Context) error {
		if !strings.Contains(log.String(), envFile+", line 2: not VAR=VALUE") {
			return poll.Saw("%q", log.String())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "secret-value") {
		t.Errorf("the log shows the file's content: %s", log.String())
	}
	if err := os.WriteFile(envFile, []byte("DATABASE_URL=postgres://two@db/lldap\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFile("postgres://two@db/lldap ")
}

func TestReadEnvFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) string {
		f, err := os.CreateTemp(dir, "env")
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(content)
		f.Close()
		return f.Name()
	}
	good := write("# a comment\r\n; another\r\n\r\nURL=postgres://u:p@db/lldap?sslmode=disable\r\n  SPACED = ab#cd  \nQUOTED='x y'\nDOUBLE=\"z\"\nEMPTY=\nLAST=no line end")
	got, err := readEnvFiles([]string{good})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"URL=postgres://u:p@db/lldap?sslmode=disable", "SPACED=ab#cd", "QUOTED=x y", "DOUBLE=z", "EMPTY=", "LAST=no line end"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for content, wantErr := range map[string]string{
		"A=1\nno-equals-sign\n": "line 2: not VAR=VALUE",
		"1A=x\n":                "line 1: not VAR=VALUE",
		"=x\n":                  "line 1: not VAR=VALUE",
	} {
		f := write(content)
		if _, err := readEnvFiles([]string{good, f}); err == nil || !strings.Contains(err.Error(), f+", "+wantErr) {
			t.Errorf("%q: %v, want %q", content, err, wantErr)
		}
	}
	missing := filepath.Join(dir, "missing.env")
	if _, err := readEnvFiles([]string{missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v", err)
	}
}

// As a container's entrypoint (Exit), the supervisor ends where it would
// restart the service: with 0 for a new value of a secret with restart,
// after stopping the service; with the service's own status when it
// exits (a kill's as a shell reports it). It says why in its termination
// log, which the kubelet makes the termination message. It writes no
// status file: the kubelet reports the container's.
func TestPodExitsForTheKubelet(t *testing.T) {
	dir := t.TempDir()
	secret, started := filepath.Join(dir, "key-seed"), filepath.Join(dir, "started")
	termination := filepath.Join(dir, "termination-log")
	said := func() string {
		t.Helper()
		data, _ := os.ReadFile(termination)
		os.Remove(termination)
		return string(data)
	}
	os.WriteFile(secret, []byte("one"), 0o600)
	run := func(command string) (string, error) {
		t.Helper()
		log := &synclog.Buffer{}
		done := make(chan error, 1)
		os.Remove(started)
		go func() {
			done <- Run(context.Background(), Options{Name: "pod-0", Exit: true, RestartOn: []string{secret}, Log: log, TerminationLog: termination,
				Command: []string{"sh", "-c", "touch " + started + "; " + command}})
		}()
		probe := poll.Probe{Endpoint: started, Expect: "the service to start", Within: 15 * time.Second}
		if err := poll.Eventually(context.Background(), probe, func(context.Context) error {
			_, err := os.Stat(started)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		err := <-done
		return log.String(), err
	}

	// A new value of the secret: the service stopped, the supervisor ends
	// with no error.
	go func() {
		time.Sleep(500 * time.Millisecond)
		os.WriteFile(secret, []byte("two"), 0o600)
	}()
	if log, err := run("exec sleep 60"); err != nil || !strings.Contains(log, "a new value of key-seed: restarting the service; exiting instead, for the kubelet to restart the container") {
		t.Errorf("new secret: %v\n%s", err, log)
	}
	if got := said(); got != "restart: a new value of key-seed" {
		t.Errorf("new secret: the termination message %q", got)
	}
	// The service exits: its status.
	log, err := run("exit 7")
	var exited *ServiceExited
	if !errors.As(err, &exited) || exited.ExitCode() != 7 {
		t.Errorf("the service exited 7: %v\n%s", err, log)
	}
	if got := said(); got != "pod pod-0: the service exited with status 7" {
		t.Errorf("the service exited 7: the termination message %q", got)
	}
	_, err = run("kill -KILL $$")
	if !errors.As(err, &exited) || exited.ExitCode() != 137 {
		t.Errorf("the service killed: %v", err)
	}
	if matches, _ := filepath.Glob(filepath.Join(dir, "*.json")); len(matches) > 0 {
		t.Errorf("a status file was written: %v", matches)
	}
}

// A restart for several new values at once says each of them: the exit
// is one for all.
func TestRestartMessageNamesEveryFile(t *testing.T) {
	got := restartMessage([]string{"/run/secrets/db.env", "/run/secrets/key-seed"})
	if got != "restart: a new value of db.env, key-seed" {
		t.Errorf("got %q", got)
	}
	files, ok := (&inventory.Exit{Message: got}).RestartFor()
	if !ok || !slices.Equal(files, []string{"db.env", "key-seed"}) {
		t.Errorf("read back: %q, %v", files, ok)
	}
}
