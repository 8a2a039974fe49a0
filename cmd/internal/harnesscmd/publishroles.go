package harnesscmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/harness/rolepublisher"
)

// NewPublishRolesCmd is the test cluster's stand-in of the unit
// lldap-publish-roles, which the main pod's systemd runs. Hidden: no one
// else calls it.
func NewPublishRolesCmd(ios *cli.Streams) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:    "publish-roles --config FILE",
		Short:  "Publish the members of a group of the directory to a KV entry of OpenBao, as lldap-publish-roles does",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if config == "" {
				return errors.New("give --config")
			}
			c, err := rolepublisher.Load(config)
			if err != nil {
				return err
			}
			return rolepublisher.Run(cmd.Context(), c, ios.ErrOut)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the stand-in's configuration (JSON)")
	return cmd
}
