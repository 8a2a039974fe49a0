package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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

Each finding carries the file, line and column of the definition it is
about, where nix can know it: a second evaluation of the nodes with
findings only. --format github writes GitHub (and Forgejo) Actions
annotations, --format sarif a SARIF 2.1.0 log. Files inside the working
directory (in CI, $GITHUB_WORKSPACE) are shown relative to it; see
docs/reports.md.

Exit status: 0 when no error was found, 1 when one was (with --strict a
warning counts), 2 when the check could not run.

With --output, the report in --format goes to the file, and the text
report still goes to standard output unless --format is text.`,
		Example: `  podroles check --flake .#mastodon
  podroles check --flake . --k8s-pod-module ./k8s-pod.nix --format junit --output check.xml
  podroles check examples/*.nix
  podroles check --flake .#mastodon --format github
  podroles check --flake . --format sarif --output podroles.sarif`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := report.CheckFormat(o.format, report.LocatedFormats...); err != nil {
				return err
			}
			nodes, err := o.sources.load(cmd.Context(), args, io.ErrOut)
			if err != nil {
				return err
			}
			results := checks.Check(nodes)
			base := locationBase()
			if err := checks.Locate(cmd.Context(), results, o.sources.evaluator.Locate, base); err != nil {
				if cmd.Context().Err() != nil {
					return err
				}
				// The findings stand without their places.
				fmt.Fprintf(io.ErrOut, "podroles check: the findings have no locations: %s\n", oneLine(err.Error()))
			}
			rep := checks.NewReport(results, o.strict)
			rep.ToolVersion, rep.Base = version, base
			return o.run(rep)
		},
	}
	o.sources.addFlags(cmd)
	cmd.Flags().StringVar(&o.format, "format", "text", "report format: text, json, junit, github or sarif")
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

// locationBase is the folder that the files of findings are shown relative
// to: the working directory, or in GitHub or Forgejo Actions the checkout
// ($GITHUB_WORKSPACE) that contains it, whose paths annotations take.
func locationBase() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if ws := os.Getenv("GITHUB_WORKSPACE"); ws != "" && filepath.IsAbs(ws) {
		if rel, err := filepath.Rel(ws, wd); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Clean(ws)
		}
	}
	return wd
}
