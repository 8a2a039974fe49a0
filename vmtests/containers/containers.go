package vmtests

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
)

// The containers provider runs each pod of the environment as a container
// of its own, through the Docker API (Docker, or Podman's compatible
// service), on a network of the environment's own. Each container
// publishes its ports on the same loopback address and port where the
// processes provider listens, so the inventory, and what the suites see,
// are the same whichever provider ran.

// Provider says how the local environment runs its pods.
type Provider string

// The providers.
const (
	// ProviderProcesses runs each pod's server as a local process.
	ProviderProcesses Provider = "processes"
	// ProviderContainers runs each pod as a container.
	ProviderContainers Provider = "containers"
)

// ParseProvider reads a provider's name.
func ParseProvider(s string) (Provider, error) {
	switch p := Provider(s); p {
	case "", ProviderProcesses:
		return ProviderProcesses, nil
	case ProviderContainers:
		return p, nil
	}
	return "", fmt.Errorf("env: --provider %q: the providers are processes and containers", s)
}

// Images are what the containers provider runs, each overridable by a
// variable or env up's --image. Servers is ours (make images): Debian's
// slapd, HAProxy and nginx, into which the host's static Vault (OpenBao's
// API), Authelia and podroles are mounted; the others are official
// images, pinned, and an empty one runs its server from Servers instead
// (LLDAP empty: slapd serves the lldap role). Every server but lldap runs
// the processes provider's own command and configuration.
type Images struct {
	Servers                                     string
	Postgres, HAProxy, Nginx, OpenBao, Authelia string
	LLDAP                                       string
}

// EnvImageServers names the servers' image, and runs every server from
// it, PostgreSQL included, and slapd as lldap (CI reaches no registry);
// the variables of the other images (imageVariable) then name an image
// for one server.
const EnvImageServers = "PODROLES_IMAGE_SERVERS"

// DefaultImages are the images when no variable names others.
var DefaultImages = Images{
	Servers:  "localhost/podroles-servers:bookworm",
	Postgres: "docker.io/library/postgres:17.2-bookworm",
	HAProxy:  "docker.io/library/haproxy:3.0.5",
	Nginx:    "docker.io/library/nginx:1.27.3",
	OpenBao:  "quay.io/openbao/openbao:2.5.3",
	Authelia: "docker.io/authelia/authelia:4.38.17",
	LLDAP:    "docker.io/lldap/lldap:v0.6.1",
}

// imageSetting is an image by the name that --image and its variable
// give it.
type imageSetting struct {
	name  string
	field func(*Images) *string
}

// imageSettings are the images, servers first: setting it resets the
// others.
var imageSettings = []imageSetting{
	{"servers", func(im *Images) *string { return &im.Servers }},
	{"postgres", func(im *Images) *string { return &im.Postgres }},
	{"haproxy", func(im *Images) *string { return &im.HAProxy }},
	{"nginx", func(im *Images) *string { return &im.Nginx }},
	{"openbao", func(im *Images) *string { return &im.OpenBao }},
	{"authelia", func(im *Images) *string { return &im.Authelia }},
	{"lldap", func(im *Images) *string { return &im.LLDAP }},
}

// imageVariable is the variable of the image named name.
func imageVariable(name string) string { return "PODROLES_IMAGE_" + strings.ToUpper(name) }

// Set sets a server's image from NAME=REF, as --image gives it; an empty
// REF runs the server from the servers' image (slapd for lldap).
// servers=REF runs every server from REF, as PODROLES_IMAGE_SERVERS does.
func (im *Images) Set(assignment string) error {
	name, ref, ok := strings.Cut(assignment, "=")
	i := slices.IndexFunc(imageSettings, func(s imageSetting) bool { return s.name == name })
	if !ok || i < 0 {
		names := make([]string, len(imageSettings))
		for i, s := range imageSettings {
			names[i] = s.name
		}
		return fmt.Errorf("--image %q: give NAME=IMAGE, NAME one of %s", assignment, strings.Join(names, ", "))
	}
	if name == "servers" {
		if ref == "" {
			return errors.New("--image servers=: the servers' image cannot be empty")
		}
		*im = Images{Servers: ref}
		return nil
	}
	*imageSettings[i].field(im) = ref
	return nil
}

// SetAll sets the images of --image's assignments, servers= first, so
// that it resets what the variables chose and not what a flag did.
func (im *Images) SetAll(assignments []string) error {
	servers := func(a string) bool { return strings.HasPrefix(a, "servers=") }
	for _, first := range []bool{true, false} {
		for _, a := range assignments {
			if servers(a) != first {
				continue
			}
			if err := im.Set(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// ImagesFromEnv returns the default images, overridden by the variables:
// one set but empty runs its server from the servers' image (slapd for
// lldap).
func ImagesFromEnv() Images {
	im := DefaultImages
	for _, s := range imageSettings {
		if ref, ok := os.LookupEnv(imageVariable(s.name)); ok && (ref != "" || s.name != "servers") {
			im.Set(s.name + "=" + ref)
		}
	}
	return im
}

// imageOf is the image a server runs from: its own, or the servers' image.
func (im Images) imageOf(own string) string {
	if own != "" {
		return own
	}
	return im.Servers
}

// imageTools are the programs as the containers run them: by name from
// the images' PATH (Debian's and the official images' layouts differ), the
// host's static Vault and Authelia where they run from the servers'
// image, OpenBao's bao and Authelia's own from theirs.
func imageTools(im Images) tools {
	t := tools{
		slapd: "/usr/sbin/slapd", slapadd: "/usr/sbin/slapadd", haproxy: "haproxy", nginx: "nginx",
		ldapSchema: "/etc/ldap/schema", ldapModules: "/usr/lib/ldap",
		vault: "bao", authelia: "authelia",
	}
	if im.OpenBao == "" {
		t.vault = findServer("vault")
	}
	if im.Authelia == "" {
		t.authelia = findServer("authelia")
	}
	if t.vault == "" || t.authelia == "" {
		t.vault, t.authelia = "", ""
	}
	return t
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// containers runs each server in a container of its own on the
// environment's network: the same command in its image, with the
// environment's folder and the host's static programs mounted at the same
// paths, as the calling user, listening on every address of the
// container and published on its pod's loopback address.
type containers struct{ e *Env }

func (c containers) tools(im Images) (tools, error) { return imageTools(im), nil }

// prepare checks the host programs the containers will run, once, and
// makes the environment's network.
func (c containers) prepare(ctx context.Context) error {
	programs, err := c.e.hostPrograms()
	if err != nil {
		return err
	}
	c.e.mounted = programs
	return c.e.startNetwork(ctx)
}

func (c containers) startPostgres(ctx context.Context) error { return c.e.startPostgresContainer(ctx) }

func (containers) listen(string) string { return "0.0.0.0" }

// reach is the server's address on the environment's network.
func (c containers) reach(name, host string) string {
	if ip := c.e.ips[name]; ip != "" {
		return ip
	}
	return host
}

func (c containers) launch(ctx context.Context, name string, argv []string, opts startOptions) (server, error) {
	e := c.e
	var prelude []string
	for v, file := range opts.secretEnv {
		if !shellName.MatchString(v) {
			return nil, fmt.Errorf("%s: %q is no variable name", name, v)
		}
		// The assignment's status is cat's, where export's would be 0: a
		// missing file stops the start.
		prelude = append(prelude, v+`="$(cat `+shellQuote([]string{file})+`)" && export `+v)
	}
	slices.Sort(prelude)
	for _, cmd := range opts.before {
		prelude = append(prelude, shellQuote(cmd))
	}
	entrypoint := argv
	if len(prelude) > 0 {
		entrypoint = append([]string{"sh", "-c", strings.Join(prelude, " && ") + ` && exec "$@"`, "sh"}, argv...)
	}
	binds := []string{e.Dir + ":" + e.Dir}
	for _, a := range argv {
		if slices.Contains(e.mounted, a) {
			binds = append(binds, a+":"+a+":ro")
		}
	}
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	return e.runContainer(ctx, containerSpec{
		name: name, image: e.Images.imageOf(opts.image), entrypoint: entrypoint, env: opts.env, workDir: opts.dir,
		user: user, binds: binds, publish: opts.publish, stopSignal: signalName(opts.stopSignal),
	})
}

// hostPrograms are the programs of the host that containers run, mounted
// at their own paths: podroles (the pods' supervisor), and the static
// Vault and Authelia that make servers built where no image of their own
// is given. Each must be static, since images differ in their libc.
func (e *Env) hostPrograms() ([]string, error) {
	var programs []string
	for _, p := range []string{e.tools.vault, e.tools.authelia} {
		if filepath.IsAbs(p) {
			programs = append(programs, p)
		}
	}
	// With OpenBao, the pods with secrets run under the supervisor.
	if e.tools.vault != "" {
		bin, err := e.podroles()
		if err != nil {
			return nil, err
		}
		programs = append(programs, bin)
	}
	for _, p := range programs {
		if err := requireStatic(p); err != nil {
			return nil, err
		}
	}
	return programs, nil
}

// requireStatic refuses a program that needs a dynamic loader: the
// containers' images have their own libc, or none.
func requireStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s, to run in containers: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked, and containers have their own libc: build it static (CGO_ENABLED=0, as make build does)", path)
		}
	}
	return nil
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return ""
}

// LabelEnv marks every container and network of an environment with its
// folder, so that env down and the tests find them through the engine.
const LabelEnv = "podroles.fediversity.eu/env"

// LabelOwner marks the containers and network of an attached environment
// (a test's) with the process that owns them, as PID-STARTTIME@SCOPE: the
// processes of a killed test die with it, its containers do not, and
// SweepOrphans removes them once their owner is gone.
const LabelOwner = "podroles.fediversity.eu/owner"

// labels are what the environment's containers and network carry. An
// environment of env up (detached) has no owner: env down removes it.
func (e *Env) labels() map[string]string {
	l := map[string]string{LabelEnv: e.Dir}
	if !e.Detached {
		l[LabelOwner] = fmt.Sprintf("%d-%s@%s", os.Getpid(), startTime(os.Getpid()), processScope())
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
	return startTime(n) == start
}

// podContainer is a pod of the environment run as a container, as
// state.json records it.
type podContainer struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	Log  string `json:"log"`

	c   testcontainers.Container
	log *os.File
}

// containerSpec is one pod's container.
type containerSpec struct {
	name, image string
	entrypoint  []string
	env         []string
	workDir     string
	user        string
	files       []testcontainers.ContainerFile
	binds       []string
	// publish maps a port in the container to the loopback address where
	// it is published, on the same port.
	publish    map[int]string
	stopSignal string
	wait       wait.Strategy
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

// startNetwork makes the environment's network.
func (e *Env) startNetwork(ctx context.Context) error {
	configureTestcontainers()
	nw, err := network.New(ctx, network.WithLabels(e.labels()))
	if err != nil {
		return fmt.Errorf("create a network: %w (is a Docker API reachable? set DOCKER_HOST, e.g. to podman's socket)", err)
	}
	e.network = nw
	return e.saveState()
}

// runContainer starts a pod's container and waits until it is ready; its
// output goes to logs/NAME.log, whose last lines a failure quotes.
func (e *Env) runContainer(ctx context.Context, spec containerSpec) (*podContainer, error) {
	logPath := filepath.Join(e.Dir, "logs", spec.name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	var exposed []string
	bindings := mobynetwork.PortMap{}
	for port, host := range spec.publish {
		p, err := mobynetwork.ParsePort(strconv.Itoa(port) + "/tcp")
		if err != nil {
			logFile.Close()
			return nil, err
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.IsLoopback() {
			logFile.Close()
			// Never published where others reach it.
			return nil, fmt.Errorf("%s: %q is no loopback address to publish on", spec.name, host)
		}
		exposed = append(exposed, p.String())
		bindings[p] = []mobynetwork.PortBinding{{HostIP: ip, HostPort: strconv.Itoa(port)}}
	}
	// testcontainers publishes every port an image declares, on every
	// address, when a request names none: those go to loopback.
	declared, err := e.imagePorts(ctx, spec.image)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("container %s: %w", spec.name, err)
	}
	for _, p := range declared {
		if _, ok := bindings[p]; !ok {
			exposed = append(exposed, p.String())
			bindings[p] = []mobynetwork.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}
		}
	}
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(e.containerName(spec.name)),
		testcontainers.WithEntrypoint(spec.entrypoint...),
		testcontainers.WithExposedPorts(exposed...),
		testcontainers.WithFiles(spec.files...),
		testcontainers.WithLabels(e.labels()),
		network.WithNetwork([]string{spec.name}, e.network),
		testcontainers.WithLogConsumerConfig(&testcontainers.LogConsumerConfig{Consumers: []testcontainers.LogConsumer{logConsumer{logFile}}}),
		testcontainers.WithConfigModifier(func(c *container.Config) {
			c.User = spec.user
			c.StopSignal = spec.stopSignal
			c.Env = append(c.Env, spec.env...)
			c.WorkingDir = spec.workDir
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = bindings
			hc.Binds = append(hc.Binds, spec.binds...)
			// An init reaps and forwards signals: a stop takes no grace
			// period to kill a shell.
			yes := true
			hc.Init = &yes
		}),
	}
	if spec.wait != nil {
		opts = append(opts, testcontainers.WithWaitStrategyAndDeadline(60*time.Second, spec.wait))
	}
	// What the engine made is checked before it starts: nothing of it
	// may listen beyond loopback.
	opts = append(opts, testcontainers.WithAdditionalLifecycleHooks(testcontainers.ContainerLifecycleHooks{
		PreStarts: []testcontainers.ContainerHook{onlyLoopback},
	}))
	c, err := testcontainers.Run(ctx, spec.image, opts...)
	pc := &podContainer{Name: spec.name, Log: logPath, log: logFile}
	if c != nil {
		// Only a container that is one: a nil *DockerContainer in the
		// interface would not compare equal to nil.
		pc.c, pc.ID = c, c.GetContainerID()
		e.containers = append(e.containers, pc)
		if saveErr := e.saveState(); saveErr != nil && err == nil {
			err = saveErr
		}
	}
	if c == nil {
		logFile.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("container %s (%s): %v: %s", spec.name, spec.image, oneLineErr(err), containerOutput(c, logPath))
	}
	ip, err := c.ContainerIP(ctx)
	if err != nil {
		return nil, fmt.Errorf("container %s: its address: %w", spec.name, err)
	}
	if e.ips == nil {
		e.ips = map[string]string{}
	}
	e.ips[spec.name] = ip
	return pc, nil
}

func (pc *podContainer) label() string { return pc.Name }

// running asks the engine whether the container still runs.
func (pc *podContainer) running() bool {
	if pc.c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := pc.c.State(ctx)
	return err == nil && st.Running
}

func (pc *podContainer) lastLines(n int) string {
	data, _ := os.ReadFile(pc.Log)
	return lastLines(string(data), n)
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
	return lastLines(string(data), 5)
}

// logConsumer writes a container's output to its log file.
type logConsumer struct{ w io.Writer }

func (l logConsumer) Accept(log testcontainers.Log) { l.w.Write(log.Content) }

// stop stops and removes the container, and closes its log.
func (pc *podContainer) stop() error {
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

// downContainers removes the environment's containers, last started
// first, then its network, then whatever else the engine holds with the
// environment's label (a container the engine made while Up was being
// cancelled, before it could be recorded).
func (e *Env) downContainers() error {
	if e.network == nil && len(e.containers) == 0 {
		return nil
	}
	var errs []error
	for i := len(e.containers) - 1; i >= 0; i-- {
		errs = append(errs, e.containers[i].stop())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.network != nil {
		if err := e.network.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("remove network %s: %w", e.network.Name, err))
		} else {
			e.network = nil
		}
	}
	errs = append(errs, removeLeftovers(ctx, e.Dir))
	return errors.Join(errs...)
}

// containerName is unique to the environment's folder, whose last
// element alone may repeat (t.TempDir's 001).
func (e *Env) containerName(name string) string {
	sum := sha256.Sum256([]byte(e.Dir))
	return fmt.Sprintf("podroles-%x-%s", sum[:4], name)
}

// imagePorts are the ports an image declares, pulling it first when the
// engine lacks it; asked once per image.
func (e *Env) imagePorts(ctx context.Context, image string) ([]mobynetwork.Port, error) {
	if ports, ok := e.declared[image]; ok {
		return ports, nil
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
	if e.declared == nil {
		e.declared = map[string][]mobynetwork.Port{}
	}
	e.declared[image] = ports
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

// EngineLeftovers lists what the engine still holds of the environment
// in dir: containers and networks by their label, and volumes of those
// containers. env up asks it before starting in a folder; the tests, after
// an environment is down.
func EngineLeftovers(ctx context.Context, dir string) ([]string, error) {
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

// removeLeftovers removes, through the engine, every container and
// network labelled with dir (env down of an environment whose process is
// gone).
func removeLeftovers(ctx context.Context, dir string) error {
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
