package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/vmtests/procgroup"
)

// Engine is a Docker API that the containers provider talks to.
type Engine struct {
	// Host is the API's address, as DOCKER_HOST gives it.
	Host string
	cmd  *exec.Cmd
	// exited is closed when the service we started has been reaped.
	exited chan struct{}
	err    error
}

// StartEngine makes a Docker API reachable: DOCKER_HOST's, when it is set
// (Docker, or a Podman service of the user's); otherwise it starts Podman's
// service on a socket in dir, to be stopped by its PID with Stop. It sets
// what testcontainers reads: DOCKER_HOST, no reaper container (the
// environment removes its own, and Podman runs no reaper), and the
// published ports' host. First it removes what killed tests left in the
// engine (SweepOrphans).
func StartEngine(ctx context.Context, dir string) (*Engine, error) {
	configureTestcontainers()
	os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
	if host := os.Getenv("DOCKER_HOST"); host != "" {
		sweep(ctx)
		return &Engine{Host: host}, nil
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		return nil, errors.New("no container engine: set DOCKER_HOST, or install podman (Debian: apt-get install podman)")
	}
	socket := filepath.Join(dir, "podman.sock")
	logFile, err := os.OpenFile(filepath.Join(dir, "podman-service.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(podman, "system", "service", "--time=0", "unix://"+socket)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// The service dies with the process that needs it, even killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("podman system service: %w", err)
	}
	eng := &Engine{Host: "unix://" + socket, cmd: cmd, exited: make(chan struct{})}
	go func() {
		eng.err = cmd.Wait()
		close(eng.exited)
	}()
	probe := poll.Probe{Endpoint: socket, Expect: "podman's service to accept connections", Within: 30 * time.Second}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		select {
		case <-eng.exited:
			data, _ := os.ReadFile(logFile.Name())
			return poll.Permanent(fmt.Errorf("podman system service exited (%v): %s", eng.err, procgroup.LastLines(string(data), 5)))
		default:
		}
		c, err := net.DialTimeout("unix", socket, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	if err != nil {
		eng.Stop()
		return nil, err
	}
	os.Setenv("DOCKER_HOST", eng.Host)
	sweep(ctx)
	return eng, nil
}

// sweep removes what killed tests left: housekeeping, whose trouble is
// said but stops no test.
func sweep(ctx context.Context) {
	if _, err := SweepOrphans(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "podroles: removing the containers of killed tests: %s\n", oneLineErr(err))
	}
}

// Stop stops the Podman service that StartEngine started, by its PID
// (its process group), and waits until it is reaped.
func (e *Engine) Stop() error {
	if e == nil || e.cmd == nil {
		return nil
	}
	pid := e.cmd.Process.Pid
	e.cmd = nil
	select {
	case <-e.exited:
		return nil
	default:
	}
	// The group was made when the service started, and cannot go to
	// another process while the service lives, which it does until
	// reaped.
	syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-e.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("podman system service (pid %d) did not stop", pid)
	}
}
