package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/nixeval"
)

// sourceOptions are the flags that name nodes, shared by every command that
// reads nodes.
type sourceOptions struct {
	flakes       []string
	files        []string
	facts        []string
	k8sPodModule string
	nix          string
	timeout      time.Duration
	showTrace    bool

	// evaluator is the one load ran, which knows where each node came
	// from (for the locations of findings).
	evaluator *nixeval.Evaluator
}

func (o *sourceOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.flakes, "flake", nil, "a flake's node as REF#NODE, or REF for all of its nixosConfigurations (repeatable)")
	f.StringArrayVar(&o.files, "file", nil, "a .nix file whose value is a node's config or a NixOS system (repeatable)")
	f.StringArrayVar(&o.facts, "facts", nil, "a facts document written by 'podroles facts' or the flake; needs no nix (repeatable)")
	f.StringVar(&o.k8sPodModule, "k8s-pod-module", "", "evaluate each NixOS system extended with this module (k8s-pod.nix)")
	f.StringVar(&o.nix, "nix", "nix", "the nix command, 2.8 or later")
	// A command with a --timeout of its own (scenarios run) calls nix's
	// --nix-timeout.
	timeout := "timeout"
	if f.Lookup(timeout) != nil {
		timeout = "nix-timeout"
	}
	f.DurationVar(&o.timeout, timeout, 10*time.Minute, "stop nix after this long (0: never)")
	f.BoolVar(&o.showTrace, "show-trace", false, "print nix's trace on failure")
}

// sources reads the flags and the arguments: a bare argument ending in
// .json is facts, in .nix a file, anything else a flake reference.
func (o *sourceOptions) sources(args []string) ([]nixeval.Source, error) {
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
		add(nixeval.FlakeSource, o.flakes),
		add(nixeval.FileSource, o.files),
		add(nixeval.FactsSource, o.facts),
		add(nixeval.GuessSource, args),
	); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no nodes given: name them with --flake REF#NODE, --file NODE.nix or --facts FACTS.json")
	}
	return out, nil
}

// load evaluates the nodes, with a progress line on a terminal.
func (o *sourceOptions) load(ctx context.Context, args []string, errOut io.Writer) ([]*facts.Node, error) {
	sources, err := o.sources(args)
	if err != nil {
		return nil, err
	}
	ev := &nixeval.Evaluator{Nix: o.nix, Timeout: o.timeout, K8sPodModule: o.k8sPodModule}
	o.evaluator = ev
	progress := isTerminal(errOut)
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
	if o.showTrace && errors.As(err, &evalErr) && evalErr.Detail != "" {
		fmt.Fprintln(errOut, evalErr.Detail)
	}
	return nodes, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// given says a source was named by a flag.
func (o *sourceOptions) given() bool {
	return len(o.flakes)+len(o.files)+len(o.facts) > 0
}

// describe gives the sources back as arguments, for a command to print.
func (o *sourceOptions) describe(args []string) []string {
	var out []string
	for _, f := range []struct {
		flag   string
		values []string
	}{{"--flake", o.flakes}, {"--file", o.files}, {"--facts", o.facts}} {
		for _, v := range f.values {
			out = append(out, f.flag, v)
		}
	}
	if o.k8sPodModule != "" {
		out = append(out, "--k8s-pod-module", o.k8sPodModule)
	}
	return append(out, args...)
}

// loadNode evaluates the sources and returns the node named name, which
// the flag --node names.
func (o *sourceOptions) loadNode(ctx context.Context, args []string, errOut io.Writer, name string) (*facts.Node, error) {
	nodes, err := o.load(ctx, args, errOut)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(nodes, func(n *facts.Node) bool { return n.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("--node %s: the sources give no node %s", name, name)
	}
	return nodes[i], nil
}
