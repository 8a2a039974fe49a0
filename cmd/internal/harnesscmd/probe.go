package harnesscmd

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/scenarios"
)

// NewProbeCmd is the reader that scenarios run adds to a node's main pod
// as an ephemeral container: it answers the runner's questions on its
// stdin. Hidden: only the runner starts it.
func NewProbeCmd(ios *cli.Streams) *cobra.Command {
	idle := scenarios.ProbeIdle
	cmd := &cobra.Command{
		Use:    "probe",
		Short:  "Answer the scenario runner's questions from inside a pod, one JSON line each on stdin",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return scenarios.ServeProbe(cmd.Context(), ios.In, ios.Out, idle)
		},
	}
	cli.DurationVar(cmd.Flags(), &idle, "idle", scenarios.ProbeIdle, "end after this long with no question (0: never; the runner attaches to it again)")
	return cmd
}
