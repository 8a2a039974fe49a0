package nodecmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/cmd/internal/cli"
)

// RulesOptions are podroles rules'.
type RulesOptions struct {
	IO *cli.Streams
	// Markdown prints a Markdown table instead of columns.
	Markdown bool
}

// NewRulesCmd is podroles rules, with explain under it.
func NewRulesCmd(ios *cli.Streams) *cobra.Command {
	o := &RulesOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the rules of podroles check",
		Long: `Lists the rules of podroles check: each rule's ID, name, severity, the
nodes it applies to, the spec items it enforces, and what it refuses.
podroles rules explain ID prints the whole text of a rule.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return RunRules(o)
		},
	}
	cmd.Flags().BoolVar(&o.Markdown, "markdown", false, "print the table in Markdown")
	// rules list, as scenarios list: the same table.
	list := &cobra.Command{
		Use:   "list",
		Short: "List the rules of podroles check (as podroles rules does)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return RunRules(o)
		},
	}
	list.Flags().BoolVar(&o.Markdown, "markdown", false, "print the table in Markdown")
	cmd.AddCommand(list, NewRulesExplainCmd(ios))
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

// RulesExplainOptions are podroles rules explain's.
type RulesExplainOptions struct {
	IO *cli.Streams
	// Rules are the IDs (or names) of the rules to explain.
	Rules []string
}

// NewRulesExplainCmd is podroles rules explain.
func NewRulesExplainCmd(ios *cli.Streams) *cobra.Command {
	o := &RulesExplainOptions{IO: ios}
	return &cobra.Command{
		Use:   "explain ID...",
		Short: "Print the whole text of a rule: what it refuses, what it counts, how to fix a node",
		Long: `Prints the reference text of each rule named by its ID (PR101) or its
name (unknown-unit): its severity, the nodes it applies to and the spec
items it enforces, why the spec refuses what it refuses, exactly what the
rule counts and what it does not, and how to fix a node. docs/rules.md
has the same texts.`,
		Example: `  podroles rules explain PR101
  podroles rules explain unknown-unit PR604`,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("name a rule by its ID or name, e.g. podroles rules explain PR101 (podroles rules lists them)")
			}
			o.Rules = args
			return RunRulesExplain(o)
		},
	}
}

// RunRulesExplain prints the text of each rule, or refuses a name that is
// no rule's before it prints anything.
func RunRulesExplain(o *RulesExplainOptions) error {
	var explain []*checks.Rule
	for _, name := range o.Rules {
		r := checks.Lookup(name)
		if r == nil {
			all := checks.Rules()
			return fmt.Errorf("no rule %q: the rules are %s to %s (podroles rules lists them)", name, all[0].ID, all[len(all)-1].ID)
		}
		explain = append(explain, r)
	}
	var b strings.Builder
	for i, r := range explain {
		if i > 0 {
			b.WriteString("\n")
		}
		writeExplanation(&b, r)
	}
	_, err := io.WriteString(o.IO.Out, b.String())
	return err
}

// writeExplanation writes a rule's heading, what it applies to, its doc
// and its long text, folded for a terminal.
func writeExplanation(w io.Writer, r *checks.Rule) {
	fmt.Fprintf(w, "%s %s: %s\nSpec: %s\nApplies to: %s\n\n", r.ID, r.Name, r.Severity, r.Spec, r.Scope)
	fmt.Fprintln(w, fold(r.Doc, explainWidth, ""))
	for _, para := range strings.Split(r.Long(), "\n\n") {
		fmt.Fprintln(w)
		for _, line := range strings.Split(para, "\n") {
			if item, ok := strings.CutPrefix(line, "- "); ok {
				fmt.Fprintln(w, "- "+fold(item, explainWidth-2, "  "))
			} else {
				fmt.Fprintln(w, fold(line, explainWidth, ""))
			}
		}
	}
}

// explainWidth is where explain folds its lines, as go help does.
const explainWidth = 78

// fold breaks text between words into lines of at most width characters
// (a longer word stands alone), each line after the first led by indent.
func fold(text string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		switch {
		case n == 0:
		case n+1+len(word) > width:
			b.WriteString("\n" + indent)
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
