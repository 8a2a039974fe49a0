// Package testenv gives tests the end-to-end harness, in the manner of
// net/http/httptest. A local environment, a control plane or a container
// engine starts for a test, on loopback addresses of its own, and stops
// when the test ends, passed or failed. It imports testing, so no
// command imports it.
package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/harness/servers"
)

// NewEnv brings a local environment up for a test, on loopback addresses
// of its own, and down when the test ends. Its servers die with the test
// binary even when it is killed.
func NewEnv(t testing.TB, opts localenv.Options) *localenv.Env {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = TempDir(t, "podroles-env-")
	}
	if opts.Loopback == "" {
		opts.Loopback = localenv.RandomLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := localenv.Up(ctx, opts)
	if err != nil {
		t.Fatalf("env up: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Down(); err != nil {
			t.Errorf("env down: %v", err)
		}
	})
	return env
}

// TempDir makes a folder for the test, removed when it ends. Unlike
// t.TempDir, its name starts with prefix, which names what it holds in
// the host's temporary folder while a run is going.
func TempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// NewControlPlane starts a control plane for a test, on loopback
// addresses of its own, and stops it when the test ends. Where make
// servers did not build it (no PODROLES_SERVERS), the test is skipped.
func NewControlPlane(t testing.TB, nodes bool) *controlplane.ControlPlane {
	t.Helper()
	dir := TempDir(t, "podroles-cp-")
	// A loaded machine (a cold make test's builds beside its runs) has
	// taken more than a minute for kwok's node alone.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir, Loopback: localenv.RandomLoopback(), Nodes: nodes})
	if err != nil {
		if os.Getenv(servers.DirEnv) == "" {
			t.Skipf("%v (make test builds them)", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Down(); err != nil {
			t.Errorf("control plane down: %v", err)
		}
	})
	return cp
}

var engine struct {
	once sync.Once
	e    *containers.Engine
	dir  string
	err  error
}

// Engine returns the container engine for the tests of a package,
// started at the first call (Podman's service, where DOCKER_HOST is
// unset), and stopped by StopEngine in TestMain. Tests of the containers
// provider run where make test built its images (it sets
// PODROLES_IMAGE_SERVERS); elsewhere they are skipped.
func Engine(t testing.TB) *containers.Engine {
	t.Helper()
	if os.Getenv(localenv.EnvImageServers) == "" {
		t.Skipf("%s is not set: make test builds the containers provider's images (make images) and sets it", localenv.EnvImageServers)
	}
	engine.once.Do(func() {
		if engine.dir, engine.err = os.MkdirTemp("", "podroles-engine-"); engine.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		engine.e, engine.err = containers.StartEngine(ctx, engine.dir)
	})
	if engine.err != nil {
		t.Fatal(engine.err)
	}
	return engine.e
}

// Main runs a package's tests and stops the engine that Engine started
// for them, then what the package's own fixtures started (stops, in
// order): a package whose tests call Engine, or share a fixture, has
// TestMain call it. A stop that fails fails the run.
func Main(m *testing.M, stops ...func() error) {
	code := m.Run()
	for _, stop := range append([]func() error{StopEngine}, stops...) {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// StopEngine stops the engine that Engine started, if it did.
func StopEngine() error {
	err := engine.e.Stop()
	if engine.dir != "" {
		os.RemoveAll(engine.dir)
	}
	return err
}
