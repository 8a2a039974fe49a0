package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/vmtests"
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
	opts := vmtests.Options{Detached: true}
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
			var err error
			if opts.Provider, err = vmtests.ParseProvider(provider); err != nil {
				return err
			}
			if len(images) > 0 && opts.Provider != vmtests.ProviderContainers {
				return fmt.Errorf("--image is for --provider containers")
			}
			if opts.Provider == vmtests.ProviderContainers {
				opts.Images = vmtests.ImagesFromEnv()
				if err := opts.Images.SetAll(images); err != nil {
					return err
				}
			}
			if !cluster && (len(args) > 0 || sources.given()) {
				return fmt.Errorf("sources are for --cluster: give it, or no sources")
			}
			if cluster {
				if opts.Cluster, err = sources.loadNode(cmd.Context(), args, io.ErrOut, opts.Node); err != nil {
					return err
				}
			}
			start := time.Now()
			opts.Progress = io.ErrOut
			env, err := vmtests.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "environment up in %s: podroles scenarios run --inventory %s\n", time.Since(start).Round(10*time.Millisecond), env.Inventory)
			if cluster {
				fmt.Fprintf(io.Out, "cluster up: podroles scenarios run --kubeconfig %s --namespace %s --node %s --inventory %s %s\n",
					env.ClusterKubeconfig(), env.Namespace, env.Node, env.ClusterInventory, strings.Join(sources.describe(args), " "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the folder of the environment (required)")
	cmd.Flags().StringVar(&opts.Loopback, "loopback", "127.0.1", "the first three octets of its loopback addresses")
	cmd.Flags().StringVar(&opts.Node, "node", "directory", "the node's name")
	cmd.Flags().StringVar(&provider, "provider", "processes", "run the pods as local processes, or as containers")
	cmd.Flags().StringArrayVar(&images, "image", nil, "NAME=IMAGE: the image of a server of the containers provider (repeatable)")
	cmd.Flags().BoolVar(&cluster, "cluster", false, "also start a control plane and the machine's real node, and deploy the node of the sources to it as real pods")
	cmd.Flags().DurationVar(&opts.NodeWait, "node-wait", 0, "with --cluster: how long to wait for the machine's node when another run has it (by default, fail at once, naming it)")
	sources.addFlags(cmd)
	cmd.MarkFlagRequired("dir")
	return cmd
}

func newEnvDownCmd(io *streams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "down --dir DIR",
		Short: "Stop the servers of the environment in DIR, by their PIDs, and remove its containers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := vmtests.Down(dir); err != nil {
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
