// Package containers runs the pods of a test environment as containers
// through a Docker API (Docker, or Podman's compatible service), on a
// network of the environment's own, with their ports published on loopback
// only. A Group records what it made in DIR/containers.json and labels it
// with the environment's folder, so that env down, or a later test, removes
// it through the engine even when the process that made it is gone.
package containers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/container"
	mobynetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/fediversity/podroles/vmtests/procgroup"
)

// Group is the containers and the network of one environment.
type Group struct {
	dir      string
	detached bool

	mu         sync.Mutex
	network    *testcontainers.DockerNetwork
	containers []*Container
	ips        map[string]string             // by name, on the network
	declared   map[string][]mobynetwork.Port // ports by image
}

// NewGroup returns an empty group of the environment in dir (an absolute
// path: the engine's labels carry it). A detached group's containers
// outlive the process that made them (env up); an attached group's are
// removed by the next sweep once that process is gone (SweepOrphans).
func NewGroup(dir string, detached bool) *Group { return &Group{dir: dir, detached: detached} }

// IP is the address of the container name on the group's network, or "".
func (g *Group) IP(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ips[name]
}

// Find returns the container started as name, or nil.
func (g *Group) Find(name string) *Container {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// record is what containers.json holds.
type record struct {
	Containers []*Container `json:"containers,omitempty"`
	Network    string       `json:"network,omitempty"`
}

// save writes containers.json; g.mu is held.
func (g *Group) save() error {
	rec := record{Containers: g.containers}
	if g.network != nil {
		rec.Network = g.network.Name
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(g.dir, ".containers.json.tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(g.dir, "containers.json"))
}

// Recorded says a group recorded containers or a network in dir.
func Recorded(dir string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "containers.json"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return false, fmt.Errorf("%s/containers.json: %w", dir, err)
	}
	return len(rec.Containers) > 0 || rec.Network != "", nil
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
	cli, err := engineClient(ctx)
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

// Container is a pod of an environment run as a container, as
// containers.json records it.
type Container struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Log  string `json:"log"`

	c   testcontainers.Container
	log *os.File
}

// Spec is one pod's container.
type Spec struct {
	Name, Image string
	Entrypoint  []string
	Env         []string
	WorkDir     string
	User        string
	Files       []testcontainers.ContainerFile
	Binds       []string
	// Publish maps a port in the container to the loopback address where
	// it is published, on the same port.
	Publish    map[int]string
	StopSignal string
	Wait       wait.Strategy
}

var configured sync.Once

// configureTestcontainers keeps testcontainers quiet (what a container
// prints goes to its log file), and without its reaper: the environment
// removes its own containers, the reaper would remove those of env up when
// the command ends, and Podman runs none.
func configureTestcontainers() {
	configured.Do(func() {
		tclog.SetDefault(tclog.NewNoopLogger())
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	})
}

// StartNetwork makes the group's network, on which its containers reach
// each other.
func (g *Group) StartNetwork(ctx context.Context) error {
	configureTestcontainers()
	nw, err := network.New(ctx, network.WithLabels(g.labels()))
	if err != nil {
		return fmt.Errorf("create a network: %w (is a Docker API reachable? set DOCKER_HOST, e.g. to podman's socket)", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.network = nw
	return g.save()
}

// Run starts a pod's container on the group's network and waits until it
// is ready; its output goes to logs/NAME.log, whose last lines a failure
// quotes. Only loopback addresses are published on.
func (g *Group) Run(ctx context.Context, spec Spec) (*Container, error) {
	if err := os.MkdirAll(filepath.Join(g.dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(g.dir, "logs", spec.Name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	var exposed []string
	bindings := mobynetwork.PortMap{}
	for port, host := range spec.Publish {
		p, err := mobynetwork.ParsePort(strconv.Itoa(port) + "/tcp")
		if err != nil {
			logFile.Close()
			return nil, err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			logFile.Close()
			// Never published where others reach it.
			return nil, fmt.Errorf("%s: %q is no loopback address to publish on", spec.Name, host)
		}
		exposed = append(exposed, p.String())
		bindings[p] = []mobynetwork.PortBinding{{HostIP: ip, HostPort: strconv.Itoa(port)}}
	}
	// testcontainers publishes every port an image declares, on every
	// address, when a request names none: those go to loopback.
	declared, err := g.imagePorts(ctx, spec.Image)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("container %s: %w", spec.Name, err)
	}
	for _, p := range declared {
		if _, ok := bindings[p]; !ok {
			exposed = append(exposed, p.String())
			bindings[p] = []mobynetwork.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		}
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(g.containerName(spec.Name)),
		testcontainers.WithEntrypoint(spec.Entrypoint...),
		testcontainers.WithExposedPorts(exposed...),
		testcontainers.WithFiles(spec.Files...),
		testcontainers.WithLabels(g.labels()),
		network.WithNetwork([]string{spec.Name}, g.network),
		testcontainers.WithLogConsumerConfig(&testcontainers.LogConsumerConfig{Consumers: []testcontainers.LogConsumer{logConsumer{logFile}}}),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.User = spec.User
			c.StopSignal = spec.StopSignal
			c.Env = append(c.Env, spec.Env...)
			c.WorkingDir = spec.WorkDir
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = bindings
			hc.Binds = append(hc.Binds, spec.Binds...)
			// An init reaps and forwards signals: a stop takes no grace
			// period to kill a shell.
			yes := true
			hc.Init = &yes
		}),
	}
	if spec.Wait != nil {
		opts = append(opts, testcontainers.WithWaitStrategyAndDeadline(60*time.Second, spec.Wait))
	}
	// What the engine made is checked before it starts: nothing of it
	// may listen beyond loopback.
	opts = append(opts, testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
		PreStarts: []testcontainers.ContainerHook{onlyLoopback},
	}))
	c, err := testcontainers.Run(ctx, spec.Image, opts...)
	pc := &Container{Name: spec.Name, Log: logPath, log: logFile}
	if c != nil {
		// Only a container that is one: a nil *DockerContainer in the
		// interface would not compare equal to nil.
		pc.c, pc.ID = c, c.GetContainerID()
		g.mu.Lock()
		g.containers = append(g.containers, pc)
		if saveErr := g.save(); saveErr != nil && err == nil {
			err = saveErr
		}
		g.mu.Unlock()
	}
	if c == nil {
		logFile.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("container %s (%s): %v: %s", spec.Name, spec.Image, oneLineErr(err), containerOutput(c, logPath))
	}
	ip, err := c.ContainerIP(ctx)
	if err != nil {
		return nil, fmt.Errorf("container %s: its address: %w", spec.Name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ips == nil {
		g.ips = map[string]string{}
	}
	g.ips[spec.Name] = ip
	return pc, nil
}

// Label names the container as the environment does.
func (pc *Container) Label() string { return pc.Name }

// Running asks the engine whether the container still runs.
func (pc *Container) Running() bool {
	if pc.c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := pc.c.State(ctx)
	return err == nil && st.Running
}

// LastLines returns the end of the container's log, to say why it failed.
func (pc *Container) LastLines(n int) string {
	data, _ := os.ReadFile(pc.Log)
	return procgroup.LastLines(string(data), n)
}

// containerOutput is the last lines a container printed: from its log
// file, or from the engine when it exited before its log was followed.
func containerOutput(c *testcontainers.DockerContainer, logPath string) string {
	data, _ := os.ReadFile(logPath)
	if len(data) == 0 && c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if r, err := c.Logs(ctx); err == nil {
			data, _ = io.ReadAll(io.LimitReader(r, 1<<16))
			r.Close()
		}
	}
	return procgroup.LastLines(string(data), 5)
}

// logConsumer writes a container's output to its log file.
type logConsumer struct{ w io.Writer }

func (l logConsumer) Accept(log testcontainers.Log) { l.w.Write(log.Content) }

// Stop stops and removes the container, and closes its log.
func (pc *Container) Stop() error {
	if pc.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testcontainers.TerminateContainer(pc.c, testcontainers.StopContext(ctx), testcontainers.StopTimeout(10*time.Second)); err != nil {
		// Kept, so that a second Down tries again.
		return fmt.Errorf("remove container %s: %w", pc.Name, err)
	}
	pc.c = nil
	pc.log.Close()
	return nil
}

// Down removes the group's containers, last started first, then its
// network, then whatever else the engine holds with the group's label (a
// container the engine made while Up was being cancelled, before it could
// be recorded).
func (g *Group) Down() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.network == nil && len(g.containers) == 0 {
		return nil
	}
	var errs []error
	for i := len(g.containers) - 1; i >= 0; i-- {
		errs = append(errs, g.containers[i].Stop())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if g.network != nil {
		if err := g.network.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", g.network.Name, err))
		} else {
			g.network = nil
		}
	}
	errs = append(errs, RemoveLeftovers(ctx, g.dir))
	return errors.Join(errs...)
}

// containerName is unique to the group's folder, whose last element alone
// may repeat (t.TempDir's 001).
func (g *Group) containerName(name string) string {
	sum := sha256.Sum256([]byte(g.dir))
	return fmt.Sprintf("podroles-%x-%s", sum[:4], name)
}

// imagePorts are the ports an image declares, pulling it first when the
// engine lacks it; asked once per image.
func (g *Group) imagePorts(ctx context.Context, image string) ([]mobynetwork.Port, error) {
	g.mu.Lock()
	known, ok := g.declared[image]
	g.mu.Unlock()
	if ok {
		return known, nil
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("the container engine: %w", err)
	}
	defer provider.Close()
	inspect, err := provider.Client().ImageInspect(ctx, image)
	if err != nil {
		// Pulled here, not through testcontainers, whose pull drops the
		// error that the engine reports inside its answer's stream; with
		// the credentials of the user's Docker configuration, as it would.
		opts := client.ImagePullOptions{}
		if _, auth, err := testcontainers.DockerImageAuth(ctx, image); err == nil {
			if opts.RegistryAuth, err = authconfig.Encode(auth); err != nil {
				return nil, fmt.Errorf("pull %s: the registry's credentials: %w", image, err)
			}
		}
		pull, err := provider.Client().ImagePull(ctx, image, opts)
		if err == nil {
			err = pull.Wait(ctx)
		}
		if err != nil {
			return nil, fmt.Errorf("pull %s: %w", image, err)
		}
		if inspect, err = provider.Client().ImageInspect(ctx, image); err != nil {
			return nil, fmt.Errorf("image %s: %w", image, err)
		}
	}
	var ports []mobynetwork.Port
	if inspect.Config != nil {
		for name := range inspect.Config.ExposedPorts {
			p, err := mobynetwork.ParsePort(name)
			if err != nil {
				return nil, fmt.Errorf("image %s declares port %q: %w", image, name, err)
			}
			ports = append(ports, p)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.declared == nil {
		g.declared = map[string][]mobynetwork.Port{}
	}
	g.declared[image] = ports
	return ports, nil
}

// onlyLoopback refuses a container whose ports would be published beyond
// loopback.
func onlyLoopback(ctx context.Context, c testcontainers.Container) error {
	inspect, err := c.Inspect(ctx)
	if err != nil {
		return err
	}
	if inspect.HostConfig == nil {
		return nil
	}
	for port, bindings := range inspect.HostConfig.PortBindings {
		for _, b := range bindings {
			switch {
			case !b.HostIP.IsValid():
				return fmt.Errorf("port %s would be published on every address of the host, beyond loopback", port)
			case !b.HostIP.IsLoopback():
				return fmt.Errorf("port %s would be published on %s, beyond loopback", port, b.HostIP)
			}
		}
	}
	return nil
}

// Leftovers lists what the engine still holds of the environment
// in dir: containers and networks by their label, and volumes of those
// containers. env up asks it before starting in a folder; the tests, after
// an environment is down.
func Leftovers(ctx context.Context, dir string) ([]string, error) {
	cli, err := engineClient(ctx)
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

func engineClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	configureTestcontainers()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("the container engine: %w (set DOCKER_HOST)", err)
	}
	return cli, nil
}

func oneLineErr(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
