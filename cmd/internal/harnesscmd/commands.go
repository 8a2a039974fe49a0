package harnesscmd

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
)

// Commands are the harness's commands, in the order --help lists them.
func Commands(ios *cli.Streams) []*cobra.Command {
	return []*cobra.Command{NewScenariosCmd(ios), NewEnvCmd(ios), NewPodCmd(ios), NewProbeCmd(ios), NewPublishRolesCmd(ios)}
}
