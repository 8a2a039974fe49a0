package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
)

func newRulesCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "List the rules of podroles check",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSEVERITY\tAPPLIES TO\tSPEC\tDOC")
			for _, r := range checks.Rules() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Severity, r.Scope, r.Spec, r.Doc)
			}
			return tw.Flush()
		},
	}
}
