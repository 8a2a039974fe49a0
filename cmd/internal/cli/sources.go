package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
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
	// Jobs is --jobs: nix processes at once; 0 is one per core.
	Jobs int
	// MaxMemory is --max-memory: a worker's bound, in bytes; 0 none.
	MaxMemory ByteSize
	// Shard is --shard I/N, of the commands that take it (AddShardFlag).
	Shard ShardValue
	// Quiet is --quiet: no progress on standard error.
	Quiet bool
	// NoProgress is set by a command whose output is for machines
	// (check --format json, junit, sarif, github): no progress line
	// either.
	NoProgress bool

	// Definitions makes the facts carry the definitions of what findings
	// could be about (podroles facts).
	Definitions bool

	// Evaluator is the one Load ran, which knows where each node came
	// from (for the locations of findings).
	Evaluator *nixeval.Evaluator
	// errOut is where Load drew its progress, for Locate's.
	errOut io.Writer
}

// DefaultMaxMemory is --max-memory's default: as nix-eval-jobs's, a bound
// that a real NixOS node stays well under and a worker reaches after some
// tens of them.
const DefaultMaxMemory = 4 << 30

// AddFlags adds the flags to cmd.
func (o *SourceOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&o.Flakes, "flake", nil, "a flake's node as REF#NODE, or REF for all of its nixosConfigurations (repeatable)")
	f.StringArrayVar(&o.Files, "file", nil, "a .nix file whose value is a node's config or a NixOS system (repeatable)")
	f.StringArrayVar(&o.Facts, "facts", nil, "a facts document written by 'podroles facts' or the flake; needs no nix (repeatable)")
	OnceVar(f, &o.K8sPodModule, "k8s-pod-module", "name the module's file, or leave the flag out", "evaluate each NixOS system extended with this module (k8s-pod.nix)")
	f.StringVar(&o.Nix, "nix", "nix", "the nix command, 2.8 or later")
	// A command with a --timeout of its own (scenarios run) calls nix's
	// --nix-timeout.
	timeout := "timeout"
	if f.Lookup(timeout) != nil {
		timeout = "nix-timeout"
	}
	DurationVar(f, &o.Timeout, timeout, 10*time.Minute, "stop nix after this long, all of its processes together (0: never)")
	f.BoolVar(&o.ShowTrace, "show-trace", false, "print nix's trace on failure")
	CountVar(f, &o.Jobs, "jobs", "j", 0, "evaluate nodes in up to N nix processes at once, each taking the next node when done (default: one per core)")
	o.MaxMemory = DefaultMaxMemory
	f.Var(&o.MaxMemory, "max-memory", "replace a nix process by a fresh one when, after a node, its memory (its process group's resident set) passes SIZE, e.g. 2GiB (0: no bound)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "draw no progress line on a terminal's standard error")
}

// AddShardFlag adds --shard, for the commands that check or write the
// facts of a slice of the nodes.
func (o *SourceOptions) AddShardFlag(cmd *cobra.Command) {
	cmd.Flags().Var(&o.Shard, "shard", "only the I-th of N stable slices of the nodes (I/N, e.g. 2/4), for a CI matrix: a node's slice depends on its name alone")
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

// CheckOutput is CheckOutput, which also refuses an output that names a
// file the sources read (a node file, a facts document, the k8s-pod
// module, a flake's own file): the report would replace it. Sources that
// cannot be read are left to Load to report.
func (o *SourceOptions) CheckOutput(output string, args []string) error {
	if err := CheckOutput(output); err != nil || output == "" {
		return err
	}
	target, err := outputTarget(output)
	if err != nil {
		return err
	}
	sources, _ := o.sources(args)
	if o.K8sPodModule != "" {
		if m, err := nixeval.FileSource(o.K8sPodModule); err == nil {
			sources = append(sources, m)
		}
	}
	for _, s := range sources {
		if s.Reads(target) {
			return fmt.Errorf("output %s: is a file that podroles reads (%s); name another file", output, s)
		}
	}
	return nil
}

// Load evaluates the nodes, with a progress line on a terminal.
func (o *SourceOptions) Load(ctx context.Context, args []string, errOut io.Writer) ([]*facts.Node, error) {
	sources, err := o.sources(args)
	if err != nil {
		return nil, err
	}
	ev := &nixeval.Evaluator{Nix: o.Nix, Timeout: o.Timeout, K8sPodModule: o.K8sPodModule, Definitions: o.Definitions, VersionCache: nixeval.DefaultVersionCache(),
		Jobs: o.Jobs, MaxMemory: int64(o.MaxMemory), Shard: nixeval.Shard(o.Shard)}
	o.Evaluator, o.errOut = ev, errOut
	start := time.Now()
	end := o.showProgress(ev, start)
	nodes, total, err := ev.LoadShard(ctx, sources)
	if end() && err == nil {
		fmt.Fprintf(errOut, "evaluated %s in %s\n", o.counted(len(nodes), total), time.Since(start).Round(10*time.Millisecond))
	}
	if err == nil && len(nodes) == 0 && !o.Quiet {
		fmt.Fprintf(errOut, "shard %s holds none of the %d nodes\n", ev.Shard, total)
	}
	if o.ShowTrace {
		for _, e := range Errors(err) {
			var evalErr *nixeval.EvalError
			if errors.As(e, &evalErr) && evalErr.Detail != "" {
				fmt.Fprintln(errOut, evalErr.Detail)
			}
		}
	}
	return nodes, err
}

// counted says how many nodes, of how many in every shard.
func (o *SourceOptions) counted(nodes, total int) string {
	if o.Shard.Count > 0 {
		return fmt.Sprintf("%d of %d node(s) (shard %s)", nodes, total, nixeval.Shard(o.Shard))
	}
	return fmt.Sprintf("%d node(s)", nodes)
}

// Locate is the evaluator's Locate, with a progress line on a terminal.
func (o *SourceOptions) Locate(ctx context.Context, queries map[facts.NodeRef][]facts.OptionRef) (map[facts.NodeRef][][]facts.Definition, error) {
	end := o.showProgress(o.Evaluator, time.Now())
	defer end()
	return o.Evaluator.Locate(ctx, queries)
}

// LocateFailures is the evaluator's LocateFailures, with a progress line
// on a terminal.
func (o *SourceOptions) LocateFailures(ctx context.Context, failed []*nixeval.NodeError) error {
	if o.Evaluator == nil {
		return nil
	}
	end := o.showProgress(o.Evaluator, time.Now())
	defer end()
	return o.Evaluator.LocateFailures(ctx, failed)
}

// showProgress draws ev's progress on a terminal until the returned end,
// which says whether it drew.
func (o *SourceOptions) showProgress(ev *nixeval.Evaluator, start time.Time) (end func() bool) {
	if o.Quiet || o.NoProgress || o.errOut == nil || !IsTerminal(o.errOut) {
		return func() bool { return false }
	}
	line := startProgress(o.errOut, start)
	ev.Progress = line.update
	return func() bool {
		ev.Progress = nil
		line.end()
		return true
	}
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

// ByteSize is a flag's amount of memory: a number of bytes with an
// optional unit, KiB, MiB, GiB or TiB (K, M, G, T mean the same), or KB,
// MB, GB, TB in powers of ten.
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40},
	{"B", 1},
}

// Set reads a size.
func (b *ByteSize) Set(s string) error {
	text := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(text, u.suffix); ok {
			text, factor = strings.TrimSpace(rest), u.factor
			break
		}
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || n < 0 || n*float64(factor) > math.MaxInt64 {
		return fmt.Errorf("%q is no size: write bytes or a number with KiB, MiB, GiB (e.g. 512MiB, 4GiB), or 0 for no bound", s)
	}
	*b = ByteSize(n * float64(factor))
	return nil
}

func (b *ByteSize) String() string {
	v := int64(*b)
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v >= u.factor && v%u.factor == 0 {
			return strconv.FormatInt(v/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

// Type names the flag's value in --help.
func (b *ByteSize) Type() string { return "SIZE" }

// ShardValue is --shard's value: I/N, or the zero value for every node.
type ShardValue nixeval.Shard

// Set reads I/N.
func (s *ShardValue) Set(text string) error {
	shard, err := nixeval.ParseShard(text)
	if err != nil {
		return err
	}
	*s = ShardValue(shard)
	return nil
}

func (s *ShardValue) String() string {
	if s.Count == 0 {
		return ""
	}
	return nixeval.Shard(*s).String()
}

// Type names the flag's value in --help.
func (s *ShardValue) Type() string { return "I/N" }
