package main

import (
	"encoding/json"
	"io"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/facts"
)

type factsOptions struct {
	io      *streams
	sources sourceOptions
	output  string
}

func newFactsCmd(io *streams) *cobra.Command {
	o := &factsOptions{io: io}
	cmd := &cobra.Command{
		Use:   "facts [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Print what podroles reads from nodes, as a facts document",
		Long: `Evaluates the nodes with nix and prints their facts: the fields of the node
surface that the rules read, as {"version": 1, "nodes": [...]}. podroles
check --facts reads the document back without nix.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			nodes, err := o.sources.load(cmd.Context(), args, io.ErrOut)
			if err != nil {
				return err
			}
			return o.run(nodes)
		},
	}
	o.sources.addFlags(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "write the facts to this file")
	return cmd
}

func (o *factsOptions) run(nodes []*facts.Node) error {
	if nodes == nil {
		nodes = []*facts.Node{}
	}
	doc := facts.Document{Version: facts.FactsVersion, Nodes: nodes}
	return writeOutput(o.output, o.io.Out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	})
}
