// Package containers runs the pods of a test environment as containers
// through a Docker API. The engine is Docker, or Podman's compatible
// service. The containers run on a network of the environment's own,
// with their ports published on loopback only. A Group records what it
// made in DIR/containers.json and labels it with the environment's
// folder, so that env down, or a later test, removes it through the
// engine even when the process that made it is gone.
//
// It speaks the Docker API through moby's own client, not testcontainers:
// the shipped binary runs the containers provider (podroles env up), and
// testcontainers imports the testing package.
package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	mobynetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/statefile"
)

// Group is the containers and the network of one environment.
type Group struct {
	dir      string
	detached bool

	mu         sync.Mutex
	network    string // its name, once made
	containers []*Container
	ips        map[string]string             // by name, on the network
	declared   map[string][]mobynetwork.Port // ports by image
}

// NewGroup returns an empty group of the environment in dir (an absolute
// path: the engine's labels carry it). A detached group's containers
// outlive the process that made them (env up); an attached group's are
// removed by the next sweep once that process is gone (SweepOrphans).
func NewGroup(dir string, detached bool) *Group { return &Group{dir: dir, detached: detached} }

// Container is a pod of an environment run as a container, as
// containers.json records it.
type Container struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Log  string `json:"log"`

	// logged is closed when the container's output has all reached its
	// log file.
	logged chan struct{}
}

// File is a file put into a container before it starts, so that a secret
// reaches neither argv nor the engine's configuration.
type File struct {
	Path string
	Data []byte
	Mode int64
}

// Spec is one pod's container.
type Spec struct {
	Name, Image string
	Entrypoint  []string
	Env         []string
	WorkDir     string
	User        string
	Files       []File
	Binds       []string
	// Publish maps a port in the container to the loopback address where
	// it is published, on the same port.
	Publish    map[int]string
	StopSignal string
}

// StartNetwork makes the group's network, on which its containers reach
// each other by name.
func (g *Group) StartNetwork(ctx context.Context) error {
	cli, err := engineClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	name := g.containerName("net")
	if _, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: g.labels()}); err != nil {
		return fmt.Errorf("create a network: %w (is a Docker API reachable? set DOCKER_HOST, e.g. to podman's socket)", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.network = name
	return g.save()
}

// Run starts a pod's container on the group's network; its output goes to
// logs/NAME.log, whose last lines a failure quotes. Only loopback
// addresses are published on, checked before the container starts.
func (g *Group) Run(ctx context.Context, spec Spec) (*Container, error) {
	cli, err := engineClient()
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if err := os.MkdirAll(filepath.Join(g.dir, "logs"), 0o700); err != nil {
		return nil, err
	}
	exposed, bindings, err := publishing(spec)
	if err != nil {
		return nil, err
	}
	// An engine publishes every port an image declares, on every
	// address, when asked to publish all: those go to loopback, on a
	// port of the engine's choosing.
	declared, err := g.imagePorts(ctx, cli, spec.Image)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", spec.Name, err)
	}
	for _, p := range declared {
		if _, ok := bindings[p]; !ok {
			exposed[p] = struct{}{}
			bindings[p] = []mobynetwork.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		}
	}
	yes := true
	created, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: g.containerName(spec.Name),
		Config: &container.Config{
			Image: spec.Image, Entrypoint: spec.Entrypoint, Env: spec.Env, WorkingDir: spec.WorkDir, User: spec.User,
			Labels: g.labels(), ExposedPorts: exposed, StopSignal: spec.StopSignal,
		},
		HostConfig: &container.HostConfig{
			PortBindings: bindings, Binds: spec.Binds, NetworkMode: container.NetworkMode(g.network),
			// An init reaps and forwards signals: a stop takes no grace
			// period to kill a shell.
			Init: &yes,
		},
		NetworkingConfig: &mobynetwork.NetworkingConfig{EndpointsConfig: map[string]*mobynetwork.EndpointSettings{
			g.network: {Aliases: []string{spec.Name}},
		}},
	})
	if err != nil {
		return nil, fmt.Errorf("container %s (%s): %v", spec.Name, spec.Image, oneline.First(err))
	}
	pc := &Container{Name: spec.Name, ID: created.ID, Log: filepath.Join(g.dir, "logs", spec.Name+".log")}
	g.mu.Lock()
	g.containers = append(g.containers, pc)
	err = g.save()
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := start(ctx, cli, pc, spec.Files); err != nil {
		return nil, fmt.Errorf("container %s (%s): %v: %s", spec.Name, spec.Image, oneline.First(err), pc.LastLines(5))
	}
	inspect, err := cli.ContainerInspect(ctx, pc.ID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("container %s: its address: %w", spec.Name, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ips == nil {
		g.ips = map[string]string{}
	}
	if ep := inspect.Container.NetworkSettings.Networks[g.network]; ep != nil && ep.IPAddress.IsValid() {
		g.ips[spec.Name] = ep.IPAddress.String()
	}
	return pc, nil
}

// publishing is what spec publishes: each port on the loopback address it
// names, on the same port; any other address is refused.
func publishing(spec Spec) (mobynetwork.PortSet, mobynetwork.PortMap, error) {
	exposed, bindings := mobynetwork.PortSet{}, mobynetwork.PortMap{}
	for port, host := range spec.Publish {
		p, err := mobynetwork.ParsePort(strconv.Itoa(port) + "/tcp")
		if err != nil {
			return nil, nil, err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			// Never published where others reach it.
			return nil, nil, fmt.Errorf("%s: %q is no loopback address to publish on", spec.Name, host)
		}
		exposed[p] = struct{}{}
		bindings[p] = []mobynetwork.PortBinding{{HostIP: ip, HostPort: strconv.Itoa(port)}}
	}
	return exposed, bindings, nil
}

// start copies files into the created container, checks what the engine
// made of its ports, starts it and follows its output into its log.
func start(ctx context.Context, cli *client.Client, pc *Container, files []File) error {
	for _, f := range files {
		// From the root, with its folder, which the image may lack.
		var archive bytes.Buffer
		tw := tar.NewWriter(&archive)
		rel := strings.TrimPrefix(path.Clean(f.Path), "/")
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: path.Dir(rel) + "/", Mode: 0o755, ModTime: time.Now()})
		tw.WriteHeader(&tar.Header{Name: rel, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: time.Now()})
		tw.Write(f.Data)
		tw.Close()
		if _, err := cli.CopyToContainer(ctx, pc.ID, client.CopyToContainerOptions{DestinationPath: "/", Content: &archive}); err != nil {
			return fmt.Errorf("copy %s: %w", f.Path, err)
		}
	}
	if err := onlyLoopback(ctx, cli, pc.ID); err != nil {
		return err
	}
	logFile, err := os.OpenFile(pc.Log, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := cli.ContainerStart(ctx, pc.ID, client.ContainerStartOptions{}); err != nil {
		logFile.Close()
		return err
	}
	// Followed with a client of its own, which lives as long as the
	// container does, and not waited for: Podman's service answers a
	// follow only once the container has printed something.
	pc.logged = make(chan struct{})
	go func() {
		defer close(pc.logged)
		defer logFile.Close()
		follower, err := engineClient()
		if err != nil {
			fmt.Fprintf(logFile, "podroles: following the container's output: %v\n", err)
			return
		}
		defer follower.Close()
		logs, err := follower.ContainerLogs(context.Background(), pc.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
		if err != nil {
			fmt.Fprintf(logFile, "podroles: following the container's output: %v\n", err)
			return
		}
		defer logs.Close()
		stdcopy.StdCopy(logFile, logFile, logs)
	}()
	return nil
}

// Label names the container as the environment does.
func (pc *Container) Label() string { return pc.Name }

// Running asks the engine whether the container still runs.
func (pc *Container) Running() bool {
	cli, err := engineClient()
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	inspect, err := cli.ContainerInspect(ctx, pc.ID, client.ContainerInspectOptions{})
	return err == nil && inspect.Container.State != nil && inspect.Container.State.Running
}

// LastLines returns the end of the container's log, to say why it failed.
func (pc *Container) LastLines(n int) string {
	if pc.logged != nil && !pc.Running() {
		// Once it exited, its last words reach the file soon.
		select {
		case <-pc.logged:
		case <-time.After(2 * time.Second):
		}
	}
	data, _ := os.ReadFile(pc.Log)
	return procgroup.LastLines(string(data), n)
}

// Stop stops and removes the container.
func (pc *Container) Stop() error {
	cli, err := engineClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	grace := 10
	if _, err := cli.ContainerStop(ctx, pc.ID, client.ContainerStopOptions{Timeout: &grace}); err != nil && !goneOrGoing(err) {
		return fmt.Errorf("stop container %s: %w", pc.Name, err)
	}
	if _, err := cli.ContainerRemove(ctx, pc.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !goneOrGoing(err) {
		// Kept, so that a second Down tries again.
		return fmt.Errorf("remove container %s: %w", pc.Name, err)
	}
	return nil
}

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

// Down removes the group's containers, last started first, then its
// network, then whatever else the engine holds with the group's label (a
// container the engine made while Up was being cancelled, before it could
// be recorded).
func (g *Group) Down() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.network == "" && len(g.containers) == 0 {
		return nil
	}
	var errs []error
	kept := g.containers[:0]
	for i := len(g.containers) - 1; i >= 0; i-- {
		if err := g.containers[i].Stop(); err != nil {
			errs = append(errs, err)
			kept = append(kept, g.containers[i])
		}
	}
	g.containers = kept
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if g.network != "" {
		if err := removeNetwork(ctx, g.network); err != nil {
			errs = append(errs, err)
		} else {
			g.network = ""
		}
	}
	errs = append(errs, RemoveLeftovers(ctx, g.dir))
	return errors.Join(errs...)
}

func removeNetwork(ctx context.Context, name string) error {
	cli, err := engineClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	if _, err := cli.NetworkRemove(ctx, name, client.NetworkRemoveOptions{}); err != nil && !goneOrGoing(err) {
		return fmt.Errorf("remove network %s: %w", name, err)
	}
	return nil
}

// containerName is unique to the group's folder, whose last element alone
// may repeat (t.TempDir's 001).
func (g *Group) containerName(name string) string {
	sum := sha256.Sum256([]byte(g.dir))
	return fmt.Sprintf("podroles-%x-%s", sum[:4], name)
}

// record is what containers.json holds.
type record struct {
	Containers []*Container `json:"containers,omitempty"`
	Network    string       `json:"network,omitempty"`
}

// save writes containers.json; g.mu is held.
func (g *Group) save() error {
	return statefile.WriteJSON(filepath.Join(g.dir, "containers.json"), record{Containers: g.containers, Network: g.network}, 0o644)
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

// imagePorts are the ports an image declares, pulling it first when the
// engine lacks it; asked once per image.
func (g *Group) imagePorts(ctx context.Context, cli *client.Client, image string) ([]mobynetwork.Port, error) {
	g.mu.Lock()
	known, ok := g.declared[image]
	g.mu.Unlock()
	if ok {
		return known, nil
	}
	inspect, err := cli.ImageInspect(ctx, image)
	if err != nil {
		if err := pull(ctx, cli, image); err != nil {
			return nil, err
		}
		if inspect, err = cli.ImageInspect(ctx, image); err != nil {
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
// loopback, as the engine made it, before it starts.
func onlyLoopback(ctx context.Context, cli *client.Client, id string) error {
	inspect, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	if inspect.Container.HostConfig == nil {
		return nil
	}
	for port, bindings := range inspect.Container.HostConfig.PortBindings {
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
