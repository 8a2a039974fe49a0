package harnesscmd

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
)

// Commands are the harness's commands, in the order --help lists them.
func Commands(io *cli.Streams) []*cobra.Command {
	return []*cobra.Command{NewScenariosCmd(io), NewEnvCmd(io), NewPodCmd(io), NewProbeCmd(io)}
}
