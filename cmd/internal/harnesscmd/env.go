package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/vmtests/localenv"
)

func newEnvCmd(io *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Start and stop a local environment of real servers for the suites",
	}
	cmd.AddCommand(newEnvUpCmd(io), newEnvDownCmd(io))
	return cmd
}

func newEnvUpCmd(io *streams) *cobra.Command {
	opts := localenv.Options{Detached: true}
	var provider string
	var images []string
	var cluster bool
	var sources sourceOptions
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
			var err error
			if opts.Provider, err = localenv.ParseProvider(provider); err != nil {
				return err
			}
			if len(images) > 0 && opts.Provider != localenv.ProviderContainers {
				return fmt.Errorf("--image is for --provider containers")
			}
			if opts.Provider == localenv.ProviderContainers {
				opts.Images = localenv.ImagesFromEnv()
				if err := opts.Images.SetAll(images); err != nil {
					return err
				}
			}
			if !cluster && (len(args) > 0 || sources.given()) {
				return fmt.Errorf("sources are for --cluster: give it, or no sources")
			}
			var p *plan.Plan
			if cluster {
				if p, err = envPlan(cmd, opts, sources, args, io); err != nil {
					return err
				}
			}
			start := time.Now()
			env, err := localenv.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "environment up in %s: podroles scenarios run --inventory %s\n", time.Since(start).Round(10*time.Millisecond), env.Inventory)
			if p == nil {
				return nil
			}
			cp, err := env.UpCluster(cmd.Context(), p)
			if err != nil {
				if downErr := env.Down(); downErr != nil {
					err = fmt.Errorf("%w; and stopping what started: %v", err, downErr)
				}
				return err
			}
			// rotation needs a kubelet's restart counts, which kwok's pods
			// do not report by themselves.
			fmt.Fprintf(io.Out, "cluster up: podroles scenarios run --kubeconfig %s --namespace %s --node %s --inventory %s %s --suite deployments,units,ldap,postgres,secrets\n",
				cp.Kubeconfig, env.Namespace, env.Node, env.Inventory, strings.Join(sources.describe(args), " "))
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the folder of the environment (required)")
	cmd.Flags().StringVar(&opts.Loopback, "loopback", "127.0.1", "the first three octets of its loopback addresses")
	cmd.Flags().StringVar(&opts.Node, "node", "directory", "the node's name")
	cmd.Flags().StringVar(&provider, "provider", "processes", "run the pods as local processes, or as containers")
	cmd.Flags().StringArrayVar(&images, "image", nil, "NAME=IMAGE: the image of a server of the containers provider (repeatable)")
	cmd.Flags().BoolVar(&cluster, "cluster", false, "also start a control plane and deploy the node of the sources to it")
	sources.addFlags(cmd)
	cmd.MarkFlagRequired("dir")
	return cmd
}

// envPlan plans the environment's node from the sources, in the namespace
// the environment serves.
func envPlan(cmd *cobra.Command, opts localenv.Options, sources sourceOptions, args []string, io *streams) (*plan.Plan, error) {
	node, err := sources.loadNode(cmd.Context(), args, io.ErrOut, opts.Node)
	if err != nil {
		return nil, err
	}
	namespace := opts.Namespace
	if namespace == "" {
		namespace = opts.Node
	}
	return plan.Make(node, plan.Options{Namespace: namespace})
}

func newEnvDownCmd(io *streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down --dir DIR",
		Short: "Stop the servers of the environment in DIR, by their PIDs, and remove its containers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := localenv.Down(dir); err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "environment in %s is down\n", dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the folder of the environment (required)")
	cmd.MarkFlagRequired("dir")
	return cmd
}
