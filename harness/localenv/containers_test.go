package localenv_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/harness/testenv"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestContainersUpDown brings the environment up with the containers
// provider: the same inventory as the processes provider writes, and
// nothing left in the engine once it is down. Every server runs from the
// servers' image, the host's Vault and Authelia mounted in, which no
// other test does (they run OpenBao and Authelia from images of their
// own).
func TestContainersUpDown(t *testing.T) {
	testenv.Engine(t)
	env := testenv.NewEnv(t, localenv.Options{Provider: localenv.ProviderContainers, Images: localenv.Images{Servers: os.Getenv(localenv.EnvImageServers)}})
	inv, err := inventory.Load(env.Inventory, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(inv.Roles["lldap"].Pods); got != 2 || inv.LDAP == nil || inv.Postgres == nil {
		t.Errorf("inventory: %d pods, ldap %v, postgres %v", got, inv.LDAP, inv.Postgres)
	}
	ctx := context.Background()
	left, err := containers.Leftovers(ctx, env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// Postgres, OpenBao, two slapd pods and their sidecars, the lldap
	// Service, the worker with its sidecar, authelia with its sidecar and
	// Service, nginx; the network.
	if len(left) != 14 {
		t.Errorf("while up, the engine holds %d objects: %v", len(left), left)
	}
	if err := env.Down(); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, env.Dir)
}

func requireNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	left, err := containers.Leftovers(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("the engine still holds %s", strings.Join(left, ", "))
	}
}

// TestContainersInterruptedUpLeavesNothing cancels env up while its
// containers start, as Ctrl-C does, at two moments: what started is
// removed, containers and network.
func TestContainersInterruptedUpLeavesNothing(t *testing.T) {
	testenv.Engine(t)
	for _, after := range []int{2, 4} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for ctx.Err() == nil {
				if left, _ := containers.Leftovers(ctx, dir); len(left) >= after {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		env, err := localenv.Up(ctx, localenv.Options{Dir: dir, Loopback: localenv.RandomLoopback(), Provider: localenv.ProviderContainers})
		cancel()
		if err == nil {
			env.Down()
			t.Fatalf("env up went through a cancel once %d objects were in the engine", after)
		}
		t.Logf("interrupted with %d objects in the engine: %v", after, err)
		requireNoLeftovers(t, dir)
	}
}

// TestContainersDownByDir is env down of an environment that env up
// started in another process: it finds the containers through the engine.
func TestContainersDownByDir(t *testing.T) {
	testenv.Engine(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := localenv.Up(ctx, localenv.Options{Dir: dir, Loopback: localenv.RandomLoopback(), Provider: localenv.ProviderContainers, Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := localenv.Up(ctx, localenv.Options{Dir: dir, Loopback: env.Loopback, Provider: localenv.ProviderContainers}); err == nil || !strings.Contains(err.Error(), "already has running servers") {
		t.Errorf("a second env up in the same folder: %v", err)
	}
	// As a person types it: relative to where they are.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := localenv.Down(rel); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, dir)
}

// BenchmarkEnvUp is the time from nothing to an inventory the suites can
// use, and back, with each provider: every server, OpenBao and the portal
// included.
func BenchmarkEnvUp(b *testing.B) {
	for _, provider := range []localenv.Provider{localenv.ProviderProcesses, localenv.ProviderContainers} {
		b.Run(string(provider), func(b *testing.B) {
			if provider == localenv.ProviderContainers {
				testenv.Engine(b)
			}
			for b.Loop() {
				env := testenv.NewEnv(b, localenv.Options{Provider: provider})
				if err := env.Down(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestKilledTestLeavesNoContainers: a test that starts an environment of
// containers and is killed (its cleanup never runs) leaves them in the
// engine until the next test's engine sweeps them; then nothing is left.
func TestKilledTestLeavesNoContainers(t *testing.T) {
	if dir := os.Getenv("PODROLES_CONTAINERS_HELPER"); dir != "" {
		if _, err := localenv.Up(context.Background(), localenv.Options{Dir: dir, Loopback: localenv.RandomLoopback(), Provider: localenv.ProviderContainers}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {}
	}
	testenv.Engine(t)
	dir := t.TempDir()
	// The helper uses this test's engine (DOCKER_HOST), which outlives it.
	t.Cleanup(func() { containers.RemoveLeftovers(context.Background(), dir) })
	cmd, sc := startHelper(t, "TestKilledTestLeavesNoContainers", "PODROLES_CONTAINERS_HELPER="+dir)
	for sc.Scan() {
		if line := sc.Text(); line == "ready" {
			break
		} else if strings.HasPrefix(line, "error") {
			t.Fatal(line)
		}
	}
	// Counted while the helper lives: no sweep touches them then (after
	// its death, another test binary's sweep may come first).
	ctx := context.Background()
	if left, err := containers.Leftovers(ctx, dir); err != nil || len(left) < 5 {
		t.Fatalf("the helper holds %v (%v): it should have its containers", left, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	removed, err := containers.SweepOrphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept %d objects", len(removed))
	requireNoLeftovers(t, dir)
	// What a living test owns is left alone.
	livingDir := t.TempDir()
	living := containers.NewGroup(livingDir, false)
	if err := living.StartNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { living.Down() })
	if _, err := containers.SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := containers.Leftovers(ctx, livingDir); len(left) != 1 {
		t.Errorf("the sweep removed what a living test owns: %v left", left)
	}
}

// buildDynamicPodroles builds podroles as go install would with cgo on: a
// dynamically linked binary. It skips where cgo has no C compiler.
func buildDynamicPodroles(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler: go build makes a static binary here")
	}
	bin := filepath.Join(t.TempDir(), "podroles")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/fediversity/podroles/cmd/podroles")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build with cgo: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Fatal("go build with cgo made a static podroles: the test proves nothing")
	}
	return bin
}

// TestContainersRunADynamicPodroles: podroles as plain go build makes it
// with cgo (dynamically linked) supervises the pods in their containers:
// in an image with no libc at all, and in an environment of containers,
// whose pods report the status only the supervisor writes.
func TestContainersRunADynamicPodroles(t *testing.T) {
	testenv.Engine(t)
	bin := buildDynamicPodroles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// An image of nothing: no libc, no loader, no shell.
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var empty bytes.Buffer
	tw := tar.NewWriter(&empty)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777})
	tw.Close()
	const image = "localhost/podroles-nothing:test"
	imported, err := cli.ImageImport(ctx, client.ImageImportSource{Source: &empty, SourceName: "-"}, image, client.ImageImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, imported)
	imported.Close()
	run, binds, err := localenv.HostProgram(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	group := containers.NewGroup(dir, false)
	t.Cleanup(func() { group.Down() })
	if err := group.StartNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := group.Run(ctx, containers.Spec{Name: "nothing", Image: image, Entrypoint: append(run, "--version"), Binds: binds})
	if err != nil {
		t.Fatal(err)
	}
	probe := poll.Probe{Endpoint: c.Log, Expect: "podroles to print its version in an image without libc", Within: 30 * time.Second}
	if err := poll.Eventually(ctx, probe, func(context.Context) error {
		if out := c.LastLines(3); !strings.Contains(out, "podroles version") {
			return poll.Saw("%q", out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if servers.Find("vault") == "" {
		t.Skip("no vault built (make servers): no pod runs under the supervisor")
	}
	env := testenv.NewEnv(t, localenv.Options{Provider: localenv.ProviderContainers, Images: localenv.Images{Servers: os.Getenv(localenv.EnvImageServers)}, Podroles: bin})
	inv, err := inventory.Load(env.Inventory, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range inv.Roles["lldap"].Pods {
		st, err := inventory.ReadPodStatus(pod.StatusFile)
		if err != nil || st.ServicePID == 0 {
			t.Errorf("pod %s: %v, %+v: its supervisor did not run", pod.Name, err, st)
		}
	}
}
