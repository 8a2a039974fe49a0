package nodecmd

import (
	"context"
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/facts"
)

// FactsOptions are podroles facts'.
type FactsOptions struct {
	IO      *cli.Streams
	Sources cli.SourceOptions
	// Args are the nodes named without a flag.
	Args   []string
	Output string
}

// NewFactsCmd is podroles facts.
func NewFactsCmd(ios *cli.Streams) *cobra.Command {
	o := &FactsOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "facts [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Print what podroles reads from nodes, as a facts document",
		Long: `Evaluates the nodes with nix and prints their facts: the fields of the node
surface that the rules read, as {"version": 1, "nodes": [...]}. podroles
check --facts reads the document back without nix.

With --shard I/N, only the I-th of N stable slices of the nodes: each job of
a CI matrix writes the facts of its slice, and one podroles check --facts
FILE... checks them together (docs/scale.md).`,
		Example: `  podroles facts --flake . -o facts.json
  podroles facts --flake . --shard 1/3 -o facts-1.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return RunFacts(cmd.Context(), o)
		},
	}
	o.Sources.AddFlags(cmd)
	o.Sources.AddShardFlag(cmd)
	cli.OutputVar(cmd.Flags(), &o.Output, "write the facts to this file")
	return cmd
}

// RunFacts evaluates the nodes and writes their facts document.
func RunFacts(ctx context.Context, o *FactsOptions) error {
	if err := o.Sources.CheckOutput(o.Output, o.Args); err != nil {
		return err
	}
	// A check of these facts places its findings without nix.
	o.Sources.Definitions = true
	nodes, err := o.Sources.Load(ctx, o.Args, o.IO.ErrOut)
	if err != nil {
		return err
	}
	if nodes == nil {
		nodes = []*facts.Node{}
	}
	doc := facts.Document{Version: facts.FactsVersion, Nodes: nodes}
	return cli.WriteOutput(ctx, o.Output, o.IO.Out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	})
}
