package vmtests

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Start brings a local environment up for a test, on loopback addresses of
// its own, and down when the test ends, passed or failed. Its servers die
// with the test binary even when it is killed.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	if opts.Dir == "" {
		// Not t.TempDir: PostgreSQL's user must pass through the folder's
		// parents, and t.TempDir's parent is the test's alone.
		dir, err := os.MkdirTemp("", "podroles-env-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o711)
		t.Cleanup(func() { os.RemoveAll(dir) })
		opts.Dir = dir
	}
	if opts.Loopback == "" {
		opts.Loopback = RandomLoopback()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := Up(ctx, opts)
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

// StartControlPlaneT starts a control plane for a test, on loopback
// addresses of its own, and stops it when the test ends. Where make
// servers did not build it (no PODROLES_SERVERS), the test is skipped.
func StartControlPlaneT(t testing.TB, nodes bool) *ControlPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", "podroles-cp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := StartControlPlane(ctx, ControlPlaneOptions{Dir: dir, Loopback: RandomLoopback(), Nodes: nodes})
	if err != nil {
		if os.Getenv(ServersEnv) == "" {
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

var testEngine struct {
	once sync.Once
	e    *Engine
	dir  string
	err  error
}

// EngineT returns the container engine for the tests of a package,
// started at the first call (Podman's service, where DOCKER_HOST is
// unset), and stopped by StopTestEngine in TestMain. Tests of the
// containers provider run where make test built its images (it sets
// PODROLES_IMAGE_SERVERS); elsewhere they are skipped.
func EngineT(t testing.TB) *Engine {
	t.Helper()
	if os.Getenv(EnvImageServers) == "" {
		t.Skipf("%s is not set: make test builds the containers provider's images (make images) and sets it", EnvImageServers)
	}
	testEngine.once.Do(func() {
		if testEngine.dir, testEngine.err = os.MkdirTemp("", "podroles-engine-"); testEngine.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		testEngine.e, testEngine.err = StartEngine(ctx, testEngine.dir)
	})
	if testEngine.err != nil {
		t.Fatal(testEngine.err)
	}
	return testEngine.e
}

// StopTestEngine stops the engine EngineT started, if it did.
func StopTestEngine() error {
	err := testEngine.e.Stop()
	if testEngine.dir != "" {
		os.RemoveAll(testEngine.dir)
	}
	return err
}
