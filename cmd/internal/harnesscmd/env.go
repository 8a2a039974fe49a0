// Package harnesscmd holds the commands of the end-to-end harness: env
// (the local environment), scenarios (the suites) and the hidden pod (the
// supervisor of a pod with secrets). They reach clusters and container
// engines, so only the full podroles binary has them. Each is an options
// struct and a run function that tests call without cobra.
package harnesscmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/vmtests/localenv"
)

// NewEnvCmd is podroles env.
func NewEnvCmd(io *cli.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Start and stop a local environment of real servers for the suites",
	}
	cmd.AddCommand(NewEnvUpCmd(io), NewEnvDownCmd(io))
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
	// Cluster starts a control plane too, with the node that Sources and
	// Args name.
	Cluster bool
	Sources cli.SourceOptions
	Args    []string
}

// NewEnvUpCmd is podroles env up.
func NewEnvUpCmd(io *cli.Streams) *cobra.Command {
	o := &EnvUpOptions{IO: io, Env: localenv.Options{Detached: true}}
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
too (make servers builds it), with KWOK as the kubelet of a fake node: the
node's plan is applied, and its pods answer with the environment's servers,
so that the cluster suites run against it (all but rotation, whose
restarts a kubelet reports and kwok's pods do not).`,
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
	f.BoolVar(&o.Cluster, "cluster", false, "also start a control plane and deploy the node of the sources to it")
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
		return err
	}
	if len(o.Images) > 0 && opts.Provider != localenv.ProviderContainers {
		return fmt.Errorf("--image is for --provider containers")
	}
	if opts.Provider == localenv.ProviderContainers {
		opts.Images = localenv.ImagesFromEnv()
		if err := opts.Images.SetAll(o.Images); err != nil {
			return err
		}
	}
	if !o.Cluster && (len(o.Args) > 0 || o.Sources.Given()) {
		return fmt.Errorf("sources are for --cluster: give it, or no sources")
	}
	var p *plan.Plan
	if o.Cluster {
		if p, err = o.plan(ctx, opts); err != nil {
			return err
		}
	}
	start := time.Now()
	env, err := localenv.Up(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "environment up in %s: podroles scenarios run --inventory %s\n", time.Since(start).Round(10*time.Millisecond), env.Inventory)
	if p == nil {
		return nil
	}
	cp, err := env.UpCluster(ctx, p)
	if err != nil {
		if downErr := env.Down(); downErr != nil {
			err = fmt.Errorf("%w; and stopping what started: %v", err, downErr)
		}
		return err
	}
	// rotation needs a kubelet's restart counts, which kwok's pods do not
	// report by themselves.
	fmt.Fprintf(o.IO.Out, "cluster up: podroles scenarios run --kubeconfig %s --namespace %s --node %s --inventory %s %s --suite deployments,units,ldap,postgres,secrets\n",
		cp.Kubeconfig, env.Namespace, env.Node, env.Inventory, strings.Join(o.Sources.Describe(o.Args), " "))
	return nil
}

// plan plans the environment's node from the sources, in the namespace
// the environment serves.
func (o *EnvUpOptions) plan(ctx context.Context, opts localenv.Options) (*plan.Plan, error) {
	node, err := o.Sources.LoadNode(ctx, o.Args, o.IO.ErrOut, opts.Node)
	if err != nil {
		return nil, err
	}
	namespace := opts.Namespace
	if namespace == "" {
		namespace = opts.Node
	}
	return plan.Make(node, plan.Options{Namespace: namespace})
}

// EnvDownOptions are podroles env down's.
type EnvDownOptions struct {
	IO  *cli.Streams
	Dir string
}

// NewEnvDownCmd is podroles env down.
func NewEnvDownCmd(io *cli.Streams) *cobra.Command {
	o := &EnvDownOptions{IO: io}
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
