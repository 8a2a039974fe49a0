package nodecmd

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
)

// Commands are the commands that read nodes and judge them, in the order
// --help lists them. podroles adds plan (package plancmd) after them.
func Commands(ios *cli.Streams) []*cobra.Command {
	return []*cobra.Command{NewCheckCmd(ios), NewFactsCmd(ios), NewRulesCmd(ios)}
}
