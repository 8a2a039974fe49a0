// Package nodecmd holds the commands that read nodes: check, facts, rules
// and plan. They need nix or a facts document, and nothing of a cluster or
// a container engine, so that the checker binary (podroles-check) links
// only what they need. Each is an options struct and a run function that
// tests call without cobra.
package nodecmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/report"
)

// CheckOptions are podroles check's.
type CheckOptions struct {
	IO      *cli.Streams
	Sources cli.SourceOptions
	// Args are the nodes named without a flag.
	Args   []string
	Format string
	Output string
	Strict bool
	// Version is the tool's, which a SARIF log names.
	Version string
}

// NewCheckCmd is podroles check.
func NewCheckCmd(ios *cli.Streams) *cobra.Command {
	o := &CheckOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "check [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Apply every evaluation rule of the pod-roles spec to nodes",
		Long: `Evaluates the nodes with nix, applies every evaluation rule of the pod-roles
spec and reports each finding with the unit, role, secret, service or port it
names.

Nodes are evaluated by up to --jobs nix processes at once, each taking the
next node when it is done with one; a process whose memory passes
--max-memory after a node is replaced by a fresh one. The report is the same
whatever --jobs is. --shard I/N checks one slice of the nodes, for a CI
matrix; podroles facts --shard writes one slice's facts, and check --facts
joins them again (docs/scale.md).

Each finding carries the file, line and column of the definition it is
about, where nix can know it: a second evaluation of the nodes with
findings only. --format github writes GitHub (and Forgejo) Actions
annotations, --format sarif a SARIF 2.1.0 log. Files inside the working
directory (in CI, $GITHUB_WORKSPACE) are shown relative to it; see
docs/reports.md.

Exit status: 0 when no error was found, 1 when one was (with --strict a
warning counts), 2 when the check could not run. A node that nix cannot
evaluate is reported as such among the others, which are checked all the
same, and the exit status is 2.

With --output, the report in --format goes to the file, and the text
report still goes to standard output unless --format is text.`,
		Example: `  podroles check --flake .#mastodon
  podroles check --flake . --k8s-pod-module ./k8s-pod.nix --format junit --output check.xml
  podroles check examples/*.nix
  podroles check --flake .#mastodon --format github
  podroles check --flake . --format sarif --output podroles.sarif
  podroles check --flake . --shard 2/4 --jobs 4 --max-memory 2GiB
  podroles check --facts facts-1.json --facts facts-2.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args, o.Version = args, cmd.Root().Version
			return RunCheck(cmd.Context(), o)
		},
	}
	o.Sources.AddFlags(cmd)
	o.Sources.AddShardFlag(cmd)
	cmd.Flags().StringVar(&o.Format, "format", "text", "report format: text, json, junit, github or sarif")
	cli.OutputVar(cmd.Flags(), &o.Output, "write the report to this file")
	cmd.Flags().BoolVar(&o.Strict, "strict", false, "warnings fail the check too")
	return cmd
}

// RunCheck checks the nodes and writes the report: a cli.FailedError
// when an error was found (with Strict, a warning). Nodes that nix could
// not evaluate are in the report too, and their errors (one per node) are
// returned after it is written.
func RunCheck(ctx context.Context, o *CheckOptions) error {
	if err := report.CheckFormat(o.Format, report.LocatedFormats...); err != nil {
		return cli.FlagError(err)
	}
	if err := o.Sources.CheckOutput(o.Output, o.Args); err != nil {
		return err
	}
	// A report for machines has no progress line beside it, even on a
	// terminal.
	o.Sources.NoProgress = o.Format != "text"
	nodes, evalErr := o.Sources.Load(ctx, o.Args, o.IO.ErrOut)
	failed, someNodes := nixeval.NodeErrors(evalErr)
	if evalErr != nil && !someNodes {
		return evalErr
	}
	results := checks.Check(nodes)
	paths := report.NewPaths(report.WorkingBase())
	err := errors.Join(o.Sources.LocateFailures(ctx, failed), checks.Locate(ctx, results, o.Sources.Locate, paths))
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The findings stand without their places.
		fmt.Fprintf(o.IO.ErrOut, "podroles check: the findings have no locations: %s\n", oneline.Of(paths.Text(err.Error())))
	}
	rep := checks.NewReport(results, o.Strict, evalFailures(failed, paths)...)
	rep.ToolVersion, rep.Base = o.Version, paths.Base()
	if err := cli.WriteOutput(ctx, o.Output, o.IO.Out, func(w io.Writer) error { return rep.Write(w, o.Format) }); err != nil {
		return err
	}
	if o.Output != "" && o.Format != "text" {
		if err := rep.WriteText(o.IO.Out); err != nil {
			return err
		}
	}
	if evalErr != nil {
		return evalErr
	}
	if !rep.Summary.Passed {
		return &cli.FailedError{Summary: fmt.Sprintf("%d errors, %d warnings", rep.Summary.Errors, rep.Summary.Warnings)}
	}
	return nil
}

// evalFailures are the nodes that nix failed on, as the report has them:
// their files shown by paths, as the findings' are.
func evalFailures(failed []*nixeval.NodeError, paths report.Paths) []checks.EvalFailure {
	var out []checks.EvalFailure
	for _, ne := range failed {
		f := checks.EvalFailure{Node: ne.Node, Source: ne.Source, Message: oneline.Of(paths.Text(ne.Reason())), Location: ne.Location()}
		if f.Location != nil {
			f.Location.File = paths.File(f.Location.File)
		}
		out = append(out, f)
	}
	return out
}
