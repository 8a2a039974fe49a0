// Package harnesscmd holds the commands of the end-to-end harness. They
// are env (the local environment), scenarios (the suites) and the hidden
// pod (the supervisor of a pod with secrets). They reach clusters and
// container engines, so only the full podroles binary has them. Each is
// an options struct and a run function that tests call without cobra.
package harnesscmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/scenarios"
)

// NewEnvCmd is podroles env.
func NewEnvCmd(ios *cli.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Start and stop a local environment of real servers for the suites",
	}
	cmd.AddCommand(NewEnvUpCmd(ios), NewEnvDownCmd(ios))
	return cmd
}

// EnvUpOptions are podroles env up's.
type EnvUpOptions struct {
	IO  *cli.Streams
	Env localenv.Options
	// Provider and Images are --provider and --image's NAME=IMAGE, which
	// fill Env.Provider and Env.Images.
	Provider string
	Images   []string
	// Cluster starts a control plane and the machine's real node too,
	// with the node that Sources and Args name as real pods.
	Cluster bool
	Sources cli.SourceOptions
	Args    []string
}

// NewEnvUpCmd is podroles env up.
func NewEnvUpCmd(ios *cli.Streams) *cobra.Command {
	o := &EnvUpOptions{IO: ios, Env: localenv.Options{Detached: true}}
	cmd := &cobra.Command{
		Use:   "up --dir DIR [--provider containers [--image NAME=IMAGE]...] [--cluster SOURCES]",
		Short: "Start a node's world of real servers on loopback, and write its inventory",
		Long: `Starts real servers on loopback addresses as the pods of a node's roles:
two OpenLDAP slapd replicas of the lldap role (LDAPS and plain LDAP),
HAProxy as its Service with only the LDAPS port, PostgreSQL with the role's
database; where make servers built them, Vault as the OpenBao API with a
sidecar agent per pod, authelia with its Service, and nginx as the portal.
Writes DIR/inventory.yaml for podroles scenarios run, logs to DIR/logs and
secrets to DIR/secrets. The servers run until podroles env down --dir DIR.
DIR may be any folder of yours, mktemp -d's included: env up never changes
its mode. As root, PostgreSQL runs as the user postgres, and where that
user cannot pass through DIR, its data is in a folder of its own in the
system's temporary folder, which DIR/postgres links to and env down
removes.

With --provider containers each server is a container of its own, through
the Docker API that DOCKER_HOST names (Docker's or Podman's socket), on a
network of the environment's own; each container publishes its ports on
its pod's loopback address and port, so the inventory is the same. The
images are the official ones, pinned, each overridable with --image
NAME=IMAGE or PODROLES_IMAGE_NAME, NAME one of postgres, haproxy, nginx,
openbao, authelia, lldap; ours (make images) for slapd. servers=IMAGE (or
PODROLES_IMAGE_SERVERS) runs every server from ours, with slapd serving
the lldap role, as CI does; lldap= gives the role to slapd alone. With
lldap's image, its replicas serve the role (LDAP, LDAPS and HTTP) and env up
creates the reader authelia-bind in lldap_strict_readonly (a path this
project's CI, which reaches no registry, has never run). A container's
output is in DIR/logs while env up runs, and in the engine (docker logs)
after.

With --cluster and the node's sources, a Kubernetes control plane starts
too, with the machine's real node: containerd and a kubelet (make servers
and make deps), one per machine. The node's plan (podroles plan) runs as
real pods: lldap's role from slapd, authelia's from Authelia, each with the
OpenBao agent writing the role's secrets as the node defines them, the pods
of the node's image from a stand-in image with systemd and the node's
units. Postgres and OpenBao listen on the node's address for them, and a
second portal stands in front of the cluster's authelia. Every suite runs
against the pods through the API server (see docs/cluster.md). Run as
root; env down stops the pods, the node and the control plane.`,
		Example: `  podroles env up --dir /tmp/env
  podroles env up --dir /tmp/env --provider containers --image lldap=
  podroles env up --dir /tmp/env --cluster examples/directory.nix`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return RunEnvUp(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Env.Dir, "dir", "", "the folder of the environment (required)")
	f.StringVar(&o.Env.Loopback, "loopback", "127.0.1", "the first three octets of its loopback addresses")
	f.StringVar(&o.Env.Node, "node", "directory", "the node's name")
	f.StringVar(&o.Provider, "provider", "processes", "run the pods as local processes, or as containers")
	f.StringArrayVar(&o.Images, "image", nil, "NAME=IMAGE: the image of a server of the containers provider (repeatable)")
	f.BoolVar(&o.Cluster, "cluster", false, "also start a control plane and the machine's real node, and deploy the node of the sources to it as real pods")
	cli.DurationVar(f, &o.Env.NodeWait, "node-wait", 0, "with --cluster: how long to wait for the machine's node when another run has it (by default, fail at once, naming it)")
	o.Sources.AddFlags(cmd)
	cmd.MarkFlagRequired("dir")
	return cmd
}

// RunEnvUp starts the environment, and with Cluster the control plane
// with the node's plan, and says how to run the suites on them.
func RunEnvUp(ctx context.Context, o *EnvUpOptions) error {
	opts := o.Env
	var err error
	if opts.Provider, err = localenv.ParseProvider(o.Provider); err != nil {
		return cli.FlagError(err)
	}
	if opts.Loopback != "" {
		if err := localenv.CheckLoopback(opts.Loopback); err != nil {
			return cli.FlagError(err)
		}
	}
	if len(o.Images) > 0 && opts.Provider != localenv.ProviderContainers {
		return fmt.Errorf("--image is for --provider containers")
	}
	if opts.Provider == localenv.ProviderContainers {
		if opts.Images, err = localenv.ImagesFromEnv(); err != nil {
			return err
		}
		if err := opts.Images.SetAll(o.Images); err != nil {
			return cli.FlagError(err)
		}
	}
	if !o.Cluster && (len(o.Args) > 0 || o.Sources.Given()) {
		return fmt.Errorf("sources are for --cluster: give it, or no sources")
	}
	if o.Cluster {
		if opts.Cluster, err = o.Sources.LoadNode(ctx, o.Args, o.IO.ErrOut, opts.Node); err != nil {
			return err
		}
	}
	start := time.Now()
	if o.Cluster {
		// A minute and more: each step is said as it ends.
		opts.Progress = o.IO.ErrOut
	}
	env, err := localenv.Up(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "environment up in %s: podroles scenarios run --inventory %s\n", time.Since(start).Round(10*time.Millisecond), env.Inventory)
	if o.Cluster {
		sources := strings.Join(o.Sources.Describe(o.Args), " ")
		// The reader of the ldap contract is added to the main pod from
		// the runner's image, which the node imported.
		reader := "--from-runner"
		if env.Images.Runner != "" {
			reader = "--probe-image " + env.Images.Runner
		}
		fmt.Fprintf(o.IO.Out, "cluster up: podroles scenarios run --kubeconfig %s --namespace %s --node %s --inventory %s %s %s\n",
			env.RealPods().Kubeconfig(), env.Namespace, env.Node, env.RealPods().Inventory, reader, sources)
		if env.Images.Runner != "" {
			// The suites as a Job of the cluster: those that need no
			// file of this host (docs/scenarios-run.md).
			fmt.Fprintf(o.IO.Out, "as a Job in the cluster: podroles scenarios manifest --namespace %[1]s --node %[2]s --image %[3]s --suite deployments,units %[4]s | kubectl --kubeconfig %[5]s apply -f - && kubectl --kubeconfig %[5]s -n %[1]s logs -f job/%[6]s\n",
				env.Namespace, env.Node, env.Images.Runner, sources, env.RealPods().Kubeconfig(), scenarios.RunnerName)
		}
	}
	return nil
}

// EnvDownOptions are podroles env down's.
type EnvDownOptions struct {
	IO  *cli.Streams
	Dir string
}

// NewEnvDownCmd is podroles env down.
func NewEnvDownCmd(ios *cli.Streams) *cobra.Command {
	o := &EnvDownOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "down --dir DIR",
		Short: "Stop the servers of the environment in DIR, by their PIDs, and remove its containers",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return RunEnvDown(o) },
	}
	cmd.Flags().StringVar(&o.Dir, "dir", "", "the folder of the environment (required)")
	cmd.MarkFlagRequired("dir")
	return cmd
}

// RunEnvDown stops the environment in Dir.
func RunEnvDown(o *EnvDownOptions) error {
	if err := localenv.Down(o.Dir); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "environment in %s is down\n", o.Dir)
	return nil
}
