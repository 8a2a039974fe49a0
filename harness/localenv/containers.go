package localenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/fediversity/podroles/harness/containers"
	"github.com/fediversity/podroles/harness/ready"
	"github.com/fediversity/podroles/harness/servers"
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
	return "", fmt.Errorf("provider %q: the providers are processes and containers", s)
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
	// Node is the base of the nodes' stand-in images on the cluster's
	// real node, and Slapd the image of its lldap role's pods (make
	// images; the servers' image where empty): no server of this
	// provider runs them.
	Node, Slapd string
	// Runner is the image of the suites' runner, which scenarios
	// manifest's Job runs (make images; none where empty).
	Runner string
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
	Node:     "localhost/podroles-node:bookworm",
	Slapd:    "localhost/podroles-slapd:bookworm",
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
	{"node", func(im *Images) *string { return &im.Node }},
	{"slapd", func(im *Images) *string { return &im.Slapd }},
	{"runner", func(im *Images) *string { return &im.Runner }},
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
		return fmt.Errorf("image %q: give NAME=IMAGE, NAME one of %s", assignment, strings.Join(names, ", "))
	}
	if name == "servers" {
		if ref == "" {
			return errors.New("image servers=: the servers' image cannot be empty")
		}
		*im = Images{Servers: ref, Node: im.Node, Slapd: im.Slapd, Runner: im.Runner}
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

// ImagesFromEnv returns the images that make images recorded on this
// machine (ImagesRecord), else the default images, overridden by the
// variables: one set but empty runs its server from the servers' image
// (slapd for lldap). The record lets podroles, run outside make, find
// the images make built, whose tags only the Makefile computes.
func ImagesFromEnv() (Images, error) {
	im := DefaultImages
	if err := im.fromRecord(ImagesRecord()); err != nil {
		return Images{}, err
	}
	for _, s := range imageSettings {
		if ref, ok := os.LookupEnv(imageVariable(s.name)); ok && (ref != "" || s.name != "servers") {
			im.Set(s.name + "=" + ref)
		}
	}
	return im, nil
}

// ImagesRecord is the file where make images records the images it
// built: images.json in the machine-wide cache (servers.CacheDir).
func ImagesRecord() string { return filepath.Join(servers.CacheDir(), "images.json") }

// fromRecord sets the images that the record names (servers first, as
// --image does); no record sets nothing.
func (im *Images) fromRecord(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the images make images recorded: %w", err)
	}
	var record map[string]string
	if err := json.Unmarshal(data, &record); err != nil {
		return fmt.Errorf("the images make images recorded, %s: %v (run make images again)", path, err)
	}
	var assignments []string
	for _, name := range slices.Sorted(maps.Keys(record)) {
		if record[name] == "" {
			continue
		}
		assignments = append(assignments, name+"="+record[name])
	}
	if err := im.SetAll(assignments); err != nil {
		return fmt.Errorf("the images make images recorded, %s: %v", path, err)
	}
	return nil
}

// imageOf is the image a server runs from: its own, or the servers' image.
func (im Images) imageOf(own string) string {
	if own != "" {
		return own
	}
	return im.Servers
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// containerProvider runs each server in a container of its own on the
// environment's network: the same command in its image, with the
// environment's folder and the host's static programs mounted at the same
// paths, as the calling user, listening on every address of the
// container and published on its pod's loopback address.
type containerProvider struct {
	site  *site
	group *containers.Group
	// mounted are the host's programs mounted into the containers, at
	// their own paths, each with what it needs to run there.
	mounted []hostProgram
}

func newContainerProvider(s *site) *containerProvider {
	return &containerProvider{site: s, group: containers.NewGroup(s.Dir, s.Detached)}
}

func (*containerProvider) tools(im Images) (tools, error) { return imageTools(im), nil }

// prepare checks the host programs the containers will run, once, and
// makes the environment's network.
func (c *containerProvider) prepare(ctx context.Context) error {
	programs, err := c.site.hostPrograms()
	if err != nil {
		return err
	}
	c.mounted = programs
	return c.group.StartNetwork(ctx)
}

func (*containerProvider) listen(string) string { return "0.0.0.0" }

// reach is the server's address on the environment's network.
func (c *containerProvider) reach(name, host string) string {
	if ip := c.group.IP(name); ip != "" {
		return ip
	}
	return host
}

func (c *containerProvider) down() error { return c.group.Down() }

func (c *containerProvider) stop(name string) error {
	pc := c.group.Find(name)
	if pc == nil {
		return fmt.Errorf("env: no server %s", name)
	}
	return pc.Stop()
}

func (c *containerProvider) launch(ctx context.Context, name string, argv []string, opts launchOptions) (ready.Server, error) {
	s := c.site
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
	binds := []string{s.Dir + ":" + s.Dir}
	for _, p := range c.mounted {
		if slices.Contains(argv, p.path) {
			binds = append(binds, p.binds...)
		}
	}
	slices.Sort(binds)
	binds = slices.Compact(binds)
	entrypoint := runAs(argv, c.mounted)
	if len(prelude) > 0 {
		entrypoint = append([]string{"sh", "-c", strings.Join(prelude, " && ") + ` && exec "$@"`, "sh"}, entrypoint...)
	}
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	return c.group.Run(ctx, containers.Spec{
		Name: name, Image: s.Images.imageOf(opts.image), Entrypoint: entrypoint, Env: opts.env, WorkDir: opts.dir,
		User: user, Binds: binds, Publish: opts.publish, StopSignal: signalName(opts.stopSignal),
	})
}

// hostPrograms are the programs of the host that containers run, mounted
// at their own paths: podroles (the pods' supervisor), and the Vault and
// Authelia that make servers built where no image of their own is given;
// each static, or with the host's loader (see hostProgram).
func (s *site) hostPrograms() ([]hostProgram, error) {
	var programs []string
	for _, p := range []string{s.tools.vault, s.tools.authelia} {
		if filepath.IsAbs(p) {
			programs = append(programs, p)
		}
	}
	// With OpenBao, the pods with secrets run under the supervisor.
	if s.tools.vault != "" {
		bin, err := s.podroles()
		if err != nil {
			return nil, err
		}
		programs = append(programs, bin)
	}
	var mounted []hostProgram
	for _, path := range programs {
		p, err := newHostProgram(path)
		if err != nil {
			return nil, err
		}
		mounted = append(mounted, p)
	}
	return mounted, nil
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

// PostgreSQL's container: from its official image (or one laid out the
// same), with its data inside, filled from the host as the processes
// provider fills its own.

// containerConfDir is where PostgreSQL's container gets its files.
const containerConfDir = "/etc/podroles"

// startPostgres runs PostgreSQL in its container, published on the
// environment's Postgres address, for postgres to fill as the processes
// provider's. The container starts as root only to hand the superuser's
// password file to postgres and delete it once initdb has read it.
func (c *containerProvider) startPostgres(ctx context.Context, pg *postgres) (ready.Server, error) {
	const data, pwfile = "/var/lib/postgresql/podroles", "/tmp/superuser-password"
	initdb := []string{"initdb", "-D", data, "-U", "postgres", "--pwfile", pwfile, "--auth", "scram-sha-256", "-E", "UTF8", "--locale", "C", "--no-sync"}
	postgres := append([]string{"postgres", "-D", data}, pg.flags("*", "/tmp")...)
	// setpriv execs as postgres (su and runuser would stay as a parent
	// in the way of the stop signal).
	asPostgres := "setpriv --reuid postgres --regid postgres --init-groups -- "
	script := strings.Join([]string{
		"set -e",
		"install -d -o postgres -g postgres -m 0700 " + data,
		"install -o postgres -m 0600 " + containerConfDir + "/superuser-password " + pwfile,
		"rm -f " + containerConfDir + "/superuser-password",
		asPostgres + shellQuote(initdb) + " >/dev/null",
		"rm -f " + pwfile,
		// Connections come through the engine's port publishing, from
		// the network.
		"echo 'host all all all scram-sha-256' >> " + data + "/pg_hba.conf",
		"exec " + asPostgres + shellQuote(postgres),
	}, "\n")
	return c.group.Run(ctx, containers.Spec{
		Name: "postgres", Image: c.site.Images.imageOf(c.site.Images.Postgres), Entrypoint: []string{"sh", "-c", script}, User: "root",
		Files:   []containers.File{{Path: containerConfDir + "/superuser-password", Data: []byte(c.site.secrets.pgSuper + "\n"), Mode: 0o600}},
		Publish: map[int]string{pg.port: c.site.postgresAddress()},
		// A fast shutdown: with SIGTERM, PostgreSQL waits for clients.
		StopSignal: "SIGINT",
	})
}

// shellQuote joins argv into one command line for sh, each word quoted.
func shellQuote(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}
