package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/nixeval"
)

// SourceOptions are the flags that name nodes, shared by every command
// that reads nodes.
type SourceOptions struct {
	// Flakes, Files and Facts are --flake, --file and --facts.
	Flakes, Files, Facts []string
	// K8sPodModule is --k8s-pod-module.
	K8sPodModule string
	// Nix is the nix command; "" is nix from PATH.
	Nix string
	// Timeout stops nix after this long; zero never.
	Timeout time.Duration
	// ShowTrace prints nix's trace when it fails.
	ShowTrace bool

	// Evaluator is the one Load ran, which knows where each node came
	// from (for the locations of findings).
	Evaluator *nixeval.Evaluator
}

// AddFlags adds the flags to cmd.
func (o *SourceOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.Flakes, "flake", nil, "a flake's node as REF#NODE, or REF for all of its nixosConfigurations (repeatable)")
	f.StringArrayVar(&o.Files, "file", nil, "a .nix file whose value is a node's config or a NixOS system (repeatable)")
	f.StringArrayVar(&o.Facts, "facts", nil, "a facts document written by 'podroles facts' or the flake; needs no nix (repeatable)")
	f.StringVar(&o.K8sPodModule, "k8s-pod-module", "", "evaluate each NixOS system extended with this module (k8s-pod.nix)")
	f.StringVar(&o.Nix, "nix", "nix", "the nix command, 2.8 or later")
	// A command with a --timeout of its own (scenarios run) calls nix's
	// --nix-timeout.
	timeout := "timeout"
	if f.Lookup(timeout) != nil {
		timeout = "nix-timeout"
	}
	f.DurationVar(&o.Timeout, timeout, 10*time.Minute, "stop nix after this long (0: never)")
	f.BoolVar(&o.ShowTrace, "show-trace", false, "print nix's trace on failure")
}

// sources reads the flags and the arguments: a bare argument ending in
// .json is facts, in .nix a file, anything else a flake reference.
func (o *SourceOptions) sources(args []string) ([]nixeval.Source, error) {
	var out []nixeval.Source
	add := func(parse func(string) (nixeval.Source, error), values []string) error {
		for _, v := range values {
			s, err := parse(v)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	}
	if err := errors.Join(
		add(nixeval.FlakeSource, o.Flakes),
		add(nixeval.FileSource, o.Files),
		add(nixeval.FactsSource, o.Facts),
		add(nixeval.GuessSource, args),
	); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no nodes given: name them with --flake REF#NODE, --file NODE.nix or --facts FACTS.json")
	}
	return out, nil
}

// Load evaluates the nodes, with a progress line on a terminal.
func (o *SourceOptions) Load(ctx context.Context, args []string, errOut io.Writer) ([]*facts.Node, error) {
	sources, err := o.sources(args)
	if err != nil {
		return nil, err
	}
	ev := &nixeval.Evaluator{Nix: o.Nix, Timeout: o.Timeout, K8sPodModule: o.K8sPodModule}
	o.Evaluator = ev
	progress := IsTerminal(errOut)
	if progress {
		fmt.Fprintf(errOut, "evaluating %d source(s) with nix...", len(sources))
	}
	start := time.Now()
	nodes, err := ev.Load(ctx, sources)
	if progress {
		fmt.Fprintf(errOut, "\r\033[K")
		if err == nil {
			fmt.Fprintf(errOut, "evaluated %d node(s) in %s\n", len(nodes), time.Since(start).Round(10*time.Millisecond))
		}
	}
	var evalErr *nixeval.EvalError
	if o.ShowTrace && errors.As(err, &evalErr) && evalErr.Detail != "" {
		fmt.Fprintln(errOut, evalErr.Detail)
	}
	return nodes, err
}

// Given says a source was named by a flag.
func (o *SourceOptions) Given() bool {
	return len(o.Flakes)+len(o.Files)+len(o.Facts) > 0
}

// Describe gives the sources back as arguments, for a command to print.
func (o *SourceOptions) Describe(args []string) []string {
	var out []string
	for _, f := range []struct {
		flag   string
		values []string
	}{{"--flake", o.Flakes}, {"--file", o.Files}, {"--facts", o.Facts}} {
		for _, v := range f.values {
			out = append(out, f.flag, v)
		}
	}
	if o.K8sPodModule != "" {
		out = append(out, "--k8s-pod-module", o.K8sPodModule)
	}
	return append(out, args...)
}

// LoadNode evaluates the sources and returns the node named name, which
// the flag --node names.
func (o *SourceOptions) LoadNode(ctx context.Context, args []string, errOut io.Writer, name string) (*facts.Node, error) {
	nodes, err := o.Load(ctx, args, errOut)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(nodes, func(n *facts.Node) bool { return n.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("--node %s: the sources give no node %s", name, name)
	}
	return nodes[i], nil
}
