package main

import (
	"fmt"
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
	cmd := &cobra.Command{
		Use:   "up --dir DIR",
		Short: "Start slapd replicas, their Service and PostgreSQL on loopback, and write the inventory",
		Long: `Starts real servers on loopback addresses as the pods of a node's lldap role:
two OpenLDAP slapd replicas (LDAPS and plain LDAP), HAProxy as the role's
Service with only the LDAPS port, and PostgreSQL with the role's database.
Writes DIR/inventory.yaml for podroles scenarios run, logs to DIR/logs and
secrets to DIR/secrets. The servers run until podroles env down --dir DIR.

With --provider containers each server is a container of its own, through
the Docker API that DOCKER_HOST names (Docker's or Podman's socket), on a
network of the environment's own; each container publishes its ports on
its pod's loopback address and port, so the inventory is the same. The
images are the official ones, pinned, each overridable with
PODROLES_IMAGE_POSTGRES, _HAPROXY, _NGINX, _OPENBAO or _AUTHELIA, and ours
for slapd (make images); PODROLES_IMAGE_SERVERS runs every server from
ours. A container's output is in DIR/logs while env up runs, and in the
engine (docker logs) after.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Provider, err = vmtests.ParseProvider(provider); err != nil {
				return err
			}
			start := time.Now()
			env, err := vmtests.Up(cmd.Context(), opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(io.Out, "environment up in %s: podroles scenarios run --inventory %s\n", time.Since(start).Round(10*time.Millisecond), env.Inventory)
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "the folder of the environment (required)")
	cmd.Flags().StringVar(&opts.Loopback, "loopback", "127.0.1", "the first three octets of its loopback addresses")
	cmd.Flags().StringVar(&opts.Node, "node", "directory", "the node's name")
	cmd.Flags().StringVar(&provider, "provider", "processes", "run the pods as local processes, or as containers")
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
