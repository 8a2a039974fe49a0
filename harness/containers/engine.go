package containers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/cpuguy83/dockercfg"
	"github.com/distribution/reference"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
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
// service on a socket in dir, to be stopped by its PID with Stop, and
// sets DOCKER_HOST to it for the clients of this process. First it removes
// what killed tests left in the engine (SweepOrphans).
func StartEngine(ctx context.Context, dir string) (*Engine, error) {
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
		fmt.Fprintf(os.Stderr, "podroles: removing the containers of killed tests: %s\n", oneline.First(err))
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

// LabelEnv marks every container and network of an environment with its
// folder, so that env down and the tests find them through the engine.
const LabelEnv = "podroles.fediversity.eu/env"

// LabelOwner marks the containers and network of an attached environment
// (a test's) with the process that owns them, as PID-STARTTIME@SCOPE: the
// processes of a killed test die with it, its containers do not, and
// SweepOrphans removes them once their owner is gone.
const LabelOwner = "podroles.fediversity.eu/owner"

// labels are what the group's containers and network carry. A detached
// group (env up's) has no owner: env down removes it.
func (g *Group) labels() map[string]string {
	l := map[string]string{LabelEnv: g.dir}
	if !g.detached {
		l[LabelOwner] = fmt.Sprintf("%d-%s@%s", os.Getpid(), procgroup.StartTime(os.Getpid()), processScope())
	}
	return l
}

// processScope names where a PID means this process: the boot and the PID
// namespace. An engine may be shared with other hosts or namespaces, whose
// PIDs this process cannot judge.
func processScope() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// SweepOrphans removes the containers and networks of attached
// environments whose owner process is gone (a test killed, or stopped by
// Ctrl-C, which runs no cleanup), and says what it removed.
func SweepOrphans(ctx context.Context) ([]string, error) {
	return removeLabelled(ctx, LabelOwner, func(labels map[string]string) bool { return ownerAlive(labels[LabelOwner]) })
}

// removeLabelled removes the containers, then the networks, that carry
// label (KEY or KEY=VALUE), but those keep says to keep, and says what it
// removed. What another removal took first is no error.
func removeLabelled(ctx context.Context, label string, keep func(labels map[string]string) bool) ([]string, error) {
	cli, err := engineClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	filter := client.Filters{}.Add("label", label)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, c := range cs.Items {
		if keep != nil && keep(c.Labels) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !goneOrGoing(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID[:12], err))
			continue
		}
		removed = append(removed, "container "+c.ID[:12])
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return removed, errors.Join(append(errs, err)...)
	}
	for _, n := range ns.Items {
		if keep != nil && keep(n.Labels) {
			continue
		}
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !goneOrGoing(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			continue
		}
		removed = append(removed, "network "+n.Name)
	}
	return removed, errors.Join(errs...)
}

// goneOrGoing is an engine's answer for what another removal took first.
func goneOrGoing(err error) bool { return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) }

// ownerAlive says the owner PID-STARTTIME@SCOPE still runs: the same PID
// with the same start time, so that a reused PID is no owner. An owner of
// another boot or PID namespace, or one it cannot read, counts as alive:
// it is not this process's to judge.
func ownerAlive(owner string) bool {
	proc, scope, ok := strings.Cut(owner, "@")
	if !ok || scope != processScope() {
		return true
	}
	pid, start, ok := strings.Cut(proc, "-")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || start == "" {
		return true
	}
	return procgroup.StartTime(n) == start
}

// Leftovers lists what the engine still holds of the environment
// in dir: containers and networks by their label, and volumes of those
// containers. env up asks it before starting in a folder; the tests, after
// an environment is down.
func Leftovers(ctx context.Context, dir string) ([]string, error) {
	cli, err := engineClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	filter := client.Filters{}.Add("label", LabelEnv+"="+dir)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return nil, err
	}
	for _, c := range cs.Items {
		out = append(out, "container "+c.ID[:12])
		for _, m := range c.Mounts {
			if m.Type == "volume" {
				out = append(out, "volume "+m.Name)
			}
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return nil, err
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	return out, nil
}

// RemoveLeftovers removes, through the engine, every container and
// network labelled with dir (env down of an environment whose process is
// gone).
func RemoveLeftovers(ctx context.Context, dir string) error {
	_, err := removeLabelled(ctx, LabelEnv+"="+dir, nil)
	return err
}

// engineClient is a client of the Docker API that DOCKER_HOST names (the
// local Docker's socket without it), which speaks the API version the
// engine does.
func engineClient() (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("the container engine: %w (set DOCKER_HOST)", err)
	}
	return cli, nil
}

// pull pulls image, with the credentials that the user's Docker
// configuration holds for its registry, as docker pull would; the
// engine's reason for a refusal, which it reports inside its answer's
// stream, is the error.
func pull(ctx context.Context, cli *client.Client, image string) error {
	opts := client.ImagePullOptions{}
	if named, err := reference.ParseNormalizedNamed(image); err == nil {
		host := dockercfg.ResolveRegistryHost(reference.Domain(named))
		if user, secret, err := dockercfg.GetRegistryCredentials(host); err == nil && secret != "" {
			auth := registry.AuthConfig{Username: user, Password: secret, ServerAddress: host}
			if user == "" {
				auth = registry.AuthConfig{IdentityToken: secret, ServerAddress: host}
			}
			if opts.RegistryAuth, err = authconfig.Encode(auth); err != nil {
				return fmt.Errorf("pull %s: the registry's credentials: %w", image, err)
			}
		}
	}
	resp, err := cli.ImagePull(ctx, image, opts)
	if err == nil {
		err = resp.Wait(ctx)
	}
	if err != nil {
		return fmt.Errorf("pull %s: %w", image, err)
	}
	return nil
}
