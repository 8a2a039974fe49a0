package harnesscmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/harness/podsupervisor"
)

// NewPodCmd is the pod supervisor of the local environment: env up runs
// each pod of a role with secrets through it. Hidden: no one else calls it.
func NewPodCmd(ios *cli.Streams) *cobra.Command {
	o := podsupervisor.Options{}
	cmd := &cobra.Command{
		Use:    "pod --name POD (--status FILE | --exit [--termination-log FILE]) [--restart-on FILE]... [--env-file FILE]... -- COMMAND [ARG]...",
		Short:  "Run a service as a pod of the local environment, restarting it when a secret with restart changes",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 || o.Name == "" || (o.Status == "" && !o.Exit) {
				return errors.New("give --name, --status (or --exit) and the service's command after --")
			}
			o.Command, o.Log = args, ios.ErrOut
			return podsupervisor.Run(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "the pod's name")
	cmd.Flags().StringVar(&o.Status, "status", "", "the file of the pod's status")
	cmd.Flags().StringArrayVar(&o.RestartOn, "restart-on", nil, "a file of a secret with restart (repeatable)")
	cmd.Flags().StringArrayVar(&o.EnvFiles, "env-file", nil, "an environment file whose variables the service gets, read at each start (repeatable)")
	cmd.Flags().BoolVar(&o.Exit, "exit", false, "as a container's entrypoint: exit where the service would restart, for the kubelet to restart the container")
	cmd.Flags().StringVar(&o.TerminationLog, "termination-log", "", "with --exit, the file where it says why it exits (the kubelet's termination message)")
	return cmd
}
