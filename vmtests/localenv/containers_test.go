package vmtests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"

	"github.com/fediversity/podroles/scenarios/inventory"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := StopTestEngine(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// TestContainersUpDown brings the environment up with the containers
// provider: the same inventory as the processes provider writes, and
// nothing left in the engine once it is down. Every server runs from the
// servers' image, the host's Vault and Authelia mounted in, which no
// other test does (they run OpenBao and Authelia from images of their
// own).
func TestContainersUpDown(t *testing.T) {
	EngineT(t)
	env := Start(t, Options{Provider: ProviderContainers, Images: Images{Servers: os.Getenv(EnvImageServers)}})
	inv, err := inventory.Load(env.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(inv.Roles["lldap"].Pods); got != 2 || inv.LDAP == nil || inv.Postgres == nil {
		t.Errorf("inventory: %d pods, ldap %v, postgres %v", got, inv.LDAP, inv.Postgres)
	}
	ctx := context.Background()
	left, err := EngineLeftovers(ctx, env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	// Postgres, OpenBao, two slapd pods and their sidecars, the lldap
	// Service, authelia with its sidecar and Service, nginx; the network.
	if len(left) != 12 {
		t.Errorf("while up, the engine holds %d objects: %v", len(left), left)
	}
	if err := env.Down(); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, env.Dir)
}

func requireNoLeftovers(t *testing.T, dir string) {
	t.Helper()
	left, err := EngineLeftovers(context.Background(), dir)
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
	EngineT(t)
	for _, after := range []int{2, 4} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for ctx.Err() == nil {
				if left, _ := EngineLeftovers(ctx, dir); len(left) >= after {
					cancel()
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		env, err := Up(ctx, Options{Dir: dir, Loopback: RandomLoopback(), Provider: ProviderContainers})
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
	EngineT(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := Up(ctx, Options{Dir: dir, Loopback: RandomLoopback(), Provider: ProviderContainers, Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Up(ctx, Options{Dir: dir, Loopback: env.Loopback, Provider: ProviderContainers}); err == nil || !strings.Contains(err.Error(), "already has running servers") {
		t.Errorf("a second env up in the same folder: %v", err)
	}
	// As a person types it: relative to where they are.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Down(rel); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, dir)
}

// TestContainersPublishOnlyOnLoopback: a container whose image declares a
// port (as OpenBao's official image declares 8200) that the environment
// does not publish gets it on loopback, not on every address; and every
// port of an environment's containers is on loopback.
func TestContainersPublishOnlyOnLoopback(t *testing.T) {
	EngineT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("ARG BASE\nFROM ${BASE}\nEXPOSE 8200\n"), 0o644)
	servers := os.Getenv(EnvImageServers)
	image := "localhost/podroles-exposes-8200:test"
	built, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{Context: dir, BuildArgs: map[string]*string{"BASE": &servers}, Repo: "localhost/podroles-exposes-8200", Tag: "test", KeepImage: true},
		Entrypoint:     []string{"true"},
	}})
	if built != nil {
		testcontainers.TerminateContainer(built)
	}
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{Options: Options{Dir: dir, Provider: ProviderContainers}}
	os.MkdirAll(filepath.Join(dir, "logs"), 0o700)
	t.Cleanup(func() { env.downContainers() })
	if err := env.startNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	pc, err := env.runContainer(ctx, containerSpec{name: "declares", image: image, entrypoint: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := pc.c.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for port, bindings := range inspect.NetworkSettings.Ports {
		for _, b := range bindings {
			n++
			if !b.HostIP.IsLoopback() {
				t.Errorf("port %s is published on %s", port, b.HostIP)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d bindings of the declared port: %v", n, inspect.NetworkSettings.Ports)
	}
	// A published address beyond loopback is refused before anything runs.
	if _, err := env.runContainer(ctx, containerSpec{name: "wide", image: image, entrypoint: []string{"sleep", "60"}, publish: map[int]string{8200: "0.0.0.0"}}); err == nil || !strings.Contains(err.Error(), "no loopback address") {
		t.Errorf("publishing on 0.0.0.0: %v", err)
	}
}

// TestImagesFromEnv: official images by default, pinned; CI's servers'
// image for all; one official image named back in over it; a variable
// set empty runs its server from the servers' image.
func TestImagesFromEnv(t *testing.T) {
	for _, s := range imageSettings {
		// Restored when the test ends; unset while it runs.
		t.Setenv(imageVariable(s.name), "")
		os.Unsetenv(imageVariable(s.name))
	}
	im := ImagesFromEnv()
	if im != DefaultImages {
		t.Errorf("no variables: %+v", im)
	}
	for _, ref := range []string{im.Postgres, im.HAProxy, im.Nginx, im.OpenBao, im.Authelia, im.LLDAP} {
		if _, tag, ok := strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("%s is not pinned by a tag", ref)
		}
	}
	if tl := imageTools(im); tl.vault != "bao" || tl.authelia != "authelia" || tl.haproxy != "haproxy" {
		t.Errorf("official images run their own programs: %+v", tl)
	}
	t.Setenv(EnvImageServers, "localhost/servers:x")
	t.Setenv("PODROLES_IMAGE_OPENBAO", "quay.io/openbao/openbao:2.5.3")
	im = ImagesFromEnv()
	want := Images{Servers: "localhost/servers:x", OpenBao: "quay.io/openbao/openbao:2.5.3"}
	if im != want {
		t.Errorf("servers' image with OpenBao's: %+v, want %+v", im, want)
	}
	if im.imageOf(im.Postgres) != "localhost/servers:x" || im.imageOf(im.OpenBao) != "quay.io/openbao/openbao:2.5.3" {
		t.Errorf("imageOf: %s, %s", im.imageOf(im.Postgres), im.imageOf(im.OpenBao))
	}
	t.Setenv("PODROLES_IMAGE_LLDAP", "registry.example/lldap:v9")
	if im = ImagesFromEnv(); im.LLDAP != "registry.example/lldap:v9" || im.Servers != "localhost/servers:x" {
		t.Errorf("lldap's image over the servers': %+v", im)
	}
	os.Unsetenv(EnvImageServers)
	t.Setenv("PODROLES_IMAGE_LLDAP", "")
	if im = ImagesFromEnv(); im.LLDAP != "" || im.Servers != DefaultImages.Servers || im.Authelia != DefaultImages.Authelia {
		t.Errorf("PODROLES_IMAGE_LLDAP set empty: %+v, want slapd and the other defaults", im)
	}
}

// TestImagesSet: env up's --image, by name; servers= resets the others
// whatever its place among the flags, lldap= gives the role back to
// slapd, postgres= runs PostgreSQL from the servers' image, and a wrong
// name is named.
func TestImagesSet(t *testing.T) {
	im := DefaultImages
	if err := im.SetAll([]string{"nginx=localhost/nginx:1", "lldap=", "postgres="}); err != nil {
		t.Fatal(err)
	}
	want := DefaultImages
	want.Nginx, want.LLDAP, want.Postgres = "localhost/nginx:1", "", ""
	if im != want || im.imageOf(im.Postgres) != DefaultImages.Servers {
		t.Errorf("got %+v, want %+v", im, want)
	}
	im = DefaultImages
	if err := im.SetAll([]string{"lldap=registry.example/lldap:v9", "servers=localhost/s:1"}); err != nil {
		t.Fatal(err)
	}
	if want := (Images{Servers: "localhost/s:1", LLDAP: "registry.example/lldap:v9"}); im != want {
		t.Errorf("lldap= before servers=: %+v, want %+v", im, want)
	}
	for _, bad := range []string{"ldap=x", "nginx", "servers="} {
		if err := im.Set(bad); err == nil || !strings.Contains(err.Error(), "--image") {
			t.Errorf("%q: %v, want an error naming --image", bad, err)
		}
	}
}

// BenchmarkEnvUp is the time from nothing to an inventory the suites can
// use, and back, with each provider: every server, OpenBao and the portal
// included.
func BenchmarkEnvUp(b *testing.B) {
	for _, provider := range []Provider{ProviderProcesses, ProviderContainers} {
		b.Run(string(provider), func(b *testing.B) {
			if provider == ProviderContainers {
				EngineT(b)
			}
			for b.Loop() {
				env := Start(b, Options{Provider: provider})
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
		if _, err := Up(context.Background(), Options{Dir: dir, Loopback: RandomLoopback(), Provider: ProviderContainers}); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {}
	}
	EngineT(t)
	dir := t.TempDir()
	// The helper uses this test's engine (DOCKER_HOST), which outlives it.
	t.Cleanup(func() { removeLeftovers(context.Background(), dir) })
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
	if left, err := EngineLeftovers(ctx, dir); err != nil || len(left) < 5 {
		t.Fatalf("the helper holds %v (%v): it should have its containers", left, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	removed, err := SweepOrphans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swept %d objects", len(removed))
	requireNoLeftovers(t, dir)
	// What a living test owns is left alone.
	living := &Env{Options: Options{Dir: t.TempDir(), Provider: ProviderContainers}}
	if err := living.startNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { living.downContainers() })
	if _, err := SweepOrphans(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := EngineLeftovers(ctx, living.Dir); len(left) != 1 {
		t.Errorf("the sweep removed what a living test owns: %v left", left)
	}
}

// TestRequireStatic: the host programs mounted into containers must not
// need the host's loader; a dynamic one is refused, named, with the fix.
func TestRequireStatic(t *testing.T) {
	if err := requireStatic("/bin/sh"); err == nil || !strings.Contains(err.Error(), "/bin/sh is dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("/bin/sh: %v", err)
	}
	if err := requireStatic(filepath.Join(t.TempDir(), "nope")); err == nil || !strings.Contains(err.Error(), "nope, to run in containers") {
		t.Errorf("a missing program: %v", err)
	}
	bin, err := (&Env{}).podroles()
	if err != nil {
		t.Fatal(err)
	}
	if err := requireStatic(bin); err != nil {
		t.Errorf("the supervisor that the tests build or make builds: %v", err)
	}
}
