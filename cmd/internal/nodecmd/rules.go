package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
)

func newRulesCmd(io *streams) *cobra.Command {
	var markdown bool
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the rules of podroles check",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if markdown {
				fmt.Fprintln(io.Out, "| ID | name | severity | applies to | spec | refuses |")
				fmt.Fprintln(io.Out, "|---|---|---|---|---|---|")
				for _, r := range checks.Rules() {
					fmt.Fprintln(io.Out, markdownRow(r))
				}
				return nil
			}
			tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSEVERITY\tAPPLIES TO\tSPEC\tDOC")
			for _, r := range checks.Rules() {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Severity, r.Scope, r.Spec, r.Doc)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table of the README")
	return cmd
}

func markdownRow(r *checks.Rule) string {
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", r.ID, r.Name, r.Severity, r.Scope, r.Spec, r.Doc)
}
