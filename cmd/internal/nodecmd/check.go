package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/report"
)

type checkOptions struct {
	io      *streams
	sources sourceOptions
	format  string
	output  string
	strict  bool
}

func newCheckCmd(io *streams) *cobra.Command {
	o := &checkOptions{io: io}
	cmd := &cobra.Command{
		Use:   "check [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Apply every evaluation rule of the pod-roles spec to nodes",
		Long: `Evaluates the nodes with nix (all in one process), applies every evaluation
rule of the pod-roles spec and reports each finding with the unit, role,
secret, service or port it names.

Exit status: 0 when no error was found, 1 when one was (with --strict a
warning counts), 2 when the check could not run.

With --output, the report in --format goes to the file, and the text
report still goes to standard output unless --format is text.`,
		Example: `  podroles check --flake .#mastodon
  podroles check --flake . --k8s-pod-module ./k8s-pod.nix --format junit --output check.xml
  podroles check examples/*.nix`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := report.CheckFormat(o.format); err != nil {
				return err
			}
			nodes, err := o.sources.load(cmd.Context(), args, io.ErrOut)
			if err != nil {
				return err
			}
			return o.run(checks.NewReport(checks.Check(nodes), o.strict))
		},
	}
	o.sources.addFlags(cmd)
	cmd.Flags().StringVar(&o.format, "format", "text", "report format: text, json or junit")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the report to this file")
	cmd.Flags().BoolVar(&o.strict, "strict", false, "warnings fail the check too")
	return cmd
}

func (o *checkOptions) run(rep *checks.Report) error {
	if err := writeOutput(o.output, o.io.Out, func(w io.Writer) error { return rep.Write(w, o.format) }); err != nil {
		return err
	}
	if o.output != "" && o.format != "text" {
		if err := rep.WriteText(o.io.Out); err != nil {
			return err
		}
	}
	if !rep.Summary.Passed {
		return &failedError{summary: fmt.Sprintf("%d errors, %d warnings", rep.Summary.Errors, rep.Summary.Warnings)}
	}
	return nil
}
