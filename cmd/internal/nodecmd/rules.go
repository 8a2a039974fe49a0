package nodecmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/cmd/internal/cli"
)

// RulesOptions are podroles rules'.
type RulesOptions struct {
	IO *cli.Streams
	// Markdown prints the README's table instead of columns.
	Markdown bool
}

// NewRulesCmd is podroles rules.
func NewRulesCmd(io *cli.Streams) *cobra.Command {
	o := &RulesOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the rules of podroles check",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return RunRules(o)
		},
	}
	cmd.Flags().BoolVar(&o.Markdown, "markdown", false, "print the table of the README")
	return cmd
}

// RunRules lists the rules.
func RunRules(o *RulesOptions) error {
	out := o.IO.Out
	if o.Markdown {
		fmt.Fprintln(out, "| ID | name | severity | applies to | spec | refuses |")
		fmt.Fprintln(out, "|---|---|---|---|---|---|")
		for _, r := range checks.Rules() {
			fmt.Fprintln(out, markdownRow(r))
		}
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSEVERITY\tAPPLIES TO\tSPEC\tDOC")
	for _, r := range checks.Rules() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Severity, r.Scope, r.Spec, r.Doc)
	}
	return tw.Flush()
}

func markdownRow(r *checks.Rule) string {
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s |", r.ID, r.Name, r.Severity, r.Scope, r.Spec, r.Doc)
}
