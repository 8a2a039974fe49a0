package harnesscmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/kubeflag"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/report"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// NewScenariosCmd is podroles scenarios.
func NewScenariosCmd(ios *cli.Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List and run the scenario suites against a node's role pods",
	}
	cmd.AddCommand(NewScenariosListCmd(ios), NewScenariosRunCmd(ios), NewScenariosManifestCmd(ios))
	return cmd
}

// NewScenariosListCmd is podroles scenarios list.
func NewScenariosListCmd(ios *cli.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the suites, their scenarios and the spec items they cover",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return RunScenariosList(ios) },
	}
}

// RunScenariosList lists the suites, each with its scenarios; a
// scenario that proves only the runner's own client says so.
func RunScenariosList(ios *cli.Streams) error {
	tw := tabwriter.NewWriter(ios.Out, 0, 4, 2, ' ', 0)
	for _, su := range scenarios.Suites() {
		fmt.Fprintf(tw, "%s\t%s\n", su.Name, su.Doc)
		for _, sc := range su.Scenarios {
			fmt.Fprintf(tw, "  %s\t[%s]\t%s\n", sc.Name, strings.Join(sc.Spec, ", "), sc.MarkedDoc())
		}
	}
	return tw.Flush()
}

// ScenariosRunOptions are podroles scenarios run's.
type ScenariosRunOptions struct {
	IO         *cli.Streams
	Inventory  string
	Kubeconfig string
	InCluster  bool
	Namespace  string
	Node       string
	Sources    cli.SourceOptions
	// Args are the node's sources named without a flag.
	Args []string
	SelectionOptions
	Format   string
	Output   string
	Parallel int
	Timeout  time.Duration
	Patience time.Duration
	// AllowSkip lets a run pass in which no scenario ran: every selected
	// one was skipped, or passed only as a runner self-check.
	AllowSkip bool
	// ProbeImage and FromRunner say where the ldap contract's reader
	// connects from (scenarios.Options).
	ProbeImage string
	FromRunner bool
}

// NewScenariosRunCmd is podroles scenarios run.
func NewScenariosRunCmd(ios *cli.Streams) *cobra.Command {
	o := &ScenariosRunOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "run (--inventory FILE [SOURCES] | (--kubeconfig FILE | --in-cluster) --namespace NS --node NODE SOURCES [--inventory BASE])",
		Short: "Run the suites against the world an inventory describes",
		Long: `Runs the scenarios of the suites (all, or those of --suite) against the
node's world that the inventory describes, in parallel.

With --kubeconfig (or --in-cluster, inside a pod) the runner finds the
node's world in the cluster by itself: the Deployments of the node's plan,
their pods by each Deployment's selector, and the Services. From outside
the cluster every pod and Service port is port-forwarded to loopback
through the API server; with --in-cluster the pods' own addresses are
dialled, and the Services by their names, through the cluster's DNS. What neither the cluster nor the node can tell (the
ldap contract's port and DNs, Postgres, OpenBao, the portal) comes from an
--inventory given as well, whose roles are then replaced by those found.

The node is the truth of what it states: the ldap contract (host, CA file,
reader's password file) from fediversity.lldap.*, authelia's host and CA
from fediversity.authelia.*, and the roles' secrets, from the node's
sources, or else from the facts file that the inventory names (factsFile).
The contract's files are read where a reader opens them, in the main pod.
In a cluster, service-ldaps-bind connects from the main pod too: the
runner adds --probe-image to it as an ephemeral container, in the pod's
network, and hands it the contract's CA and password over its stdin;
--from-runner connects from the runner instead.
Where the inventory gives one of these with another value than the node,
the run stops before any scenario, naming both.

Exit status: 0 when every scenario passed or was skipped and at least one
ran, 1 when one failed or none ran (every selected one skipped, or passed
only as a runner self-check: neither proves anything about the node;
--allow-skip lets that pass), 2 when the runner could not run (a wrong
flag, a bad inventory, an inventory that the node contradicts).`,
		Example: `  podroles env up --dir /tmp/env && podroles scenarios run --inventory /tmp/env/inventory.yaml
  podroles scenarios run --inventory node.yaml --suite ldap --run 'each-pod-.*' --format junit -o scenarios.xml
  podroles scenarios run --inventory world.yaml --flake .#directory
  podroles scenarios run --kubeconfig ~/.kube/config --namespace mastodon --node mastodon --flake .#mastodon --suite deployments,units`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return RunScenarios(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Inventory, "inventory", "", "the inventory of the node's world (YAML)")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "find the node's world in this cluster instead of an inventory")
	f.BoolVar(&o.InCluster, "in-cluster", false, "find the node's world in the cluster this pod runs in, and dial pods and Services directly")
	f.StringVar(&o.Namespace, "namespace", "", "with --kubeconfig or --in-cluster: the namespace of the node's objects")
	f.StringVar(&o.Node, "node", "", "with --kubeconfig or --in-cluster: the node, among the sources")
	o.SelectionOptions.AddFlags(f, "also run the scenarios that change the deployment: they revoke credentials, write secrets (and put them back) and restart sidecars")
	f.StringVar(&o.Format, "format", "text", "report format: text, json or junit")
	cli.OutputVar(f, &o.Output, "write the report to this file")
	cli.CountVar(f, &o.Parallel, "parallel", "", scenarios.DefaultParallel, "how many scenarios run at once")
	cli.DurationVar(f, &o.Timeout, "timeout", scenarios.DefaultTimeout, "the time each scenario may take, besides the windows it must watch (an agent's render interval, a credential's TTL)")
	cli.DurationVar(f, &o.Patience, "patience", scenarios.DefaultPatience, "how long a step waits for the world before it fails")
	f.BoolVar(&o.AllowSkip, "allow-skip", false, "exit 0 when no scenario ran (every selected one skipped, or passed only as a runner self-check)")
	f.StringVar(&o.ProbeImage, "probe-image", "", "in a cluster: the runner's image (entrypoint podroles), added to the main pod as the reader of the ldap contract")
	f.BoolVar(&o.FromRunner, "from-runner", false, "in a cluster: the reader of the ldap contract connects from the runner, for clusters where it may not add containers to pods")
	o.Sources.AddFlags(cmd)
	return cmd
}

// RunScenarios runs the suites against the inventory, or the node's world
// found in a cluster, and writes the report: a cli.FailedError when a
// scenario failed.
func RunScenarios(ctx context.Context, o *ScenariosRunOptions) error {
	if o.Inventory == "" && o.Kubeconfig == "" && !o.InCluster {
		return fmt.Errorf("give --inventory FILE (written for a deployment, or by podroles env up), or --kubeconfig FILE (or --in-cluster) with --namespace and --node and the node's sources")
	}
	if o.InCluster && o.Kubeconfig != "" {
		return fmt.Errorf("--in-cluster and --kubeconfig exclude each other: --in-cluster reaches the API server with the pod's service account")
	}
	if err := report.CheckFormat(o.Format); err != nil {
		return cli.FlagError(err)
	}
	if err := cli.CheckOutput(o.Output); err != nil {
		return err
	}
	if err := kubeflag.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	// The kubeconfig is read before the node is evaluated, which may take
	// long: a wrong path fails at once.
	if o.Kubeconfig != "" {
		if _, err := kube.Config(o.Kubeconfig); err != nil {
			return fmt.Errorf("--kubeconfig %s: %s", o.Kubeconfig, strings.TrimPrefix(oneline.Err(err), "kubeconfig "+o.Kubeconfig+": "))
		}
	}
	suites, re, err := o.Select()
	if err != nil {
		return err
	}
	// Flags that exclude each other fail before the node's evaluation and
	// the cluster's discovery.
	if o.ProbeImage != "" && o.FromRunner {
		return fmt.Errorf("--probe-image and --from-runner exclude each other: the reader connects from the main pod or from the runner")
	}
	w, inv, closeWorld, err := world.Open(ctx, o.sources())
	if err != nil {
		return err
	}
	defer closeWorld()
	opts := scenarios.Options{Parallel: o.Parallel, Timeout: o.Timeout, Patience: o.Patience, Run: re, Disruptive: o.Disruptive, ProbeImage: o.ProbeImage, FromRunner: o.FromRunner}
	if cli.IsTerminal(o.IO.ErrOut) {
		opts.Progress = progressLine(o.IO.ErrOut)
	}
	rep := scenarios.NewReport(inv.Node, scenarios.Run(ctx, w, suites, opts))
	if o.AllowSkip {
		rep.AllowSkips()
	}
	if err := cli.WriteOutput(ctx, o.Output, o.IO.Out, func(w io.Writer) error { return rep.Write(w, o.Format) }); err != nil {
		return err
	}
	if o.Output != "" && o.Format != "text" {
		if err := rep.WriteText(o.IO.Out); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted")
	}
	switch rep.Summary.Verdict {
	case scenarios.VerdictFailed, scenarios.VerdictInconclusive:
		return &cli.FailedError{Summary: rep.Why()}
	case scenarios.VerdictNothingRan:
		fmt.Fprintf(o.IO.ErrOut, "podroles scenarios run: %s; --allow-skip lets such a run pass\n", rep.Why())
		return &cli.FailedError{Summary: "no scenario ran"}
	}
	return nil
}

// progressLine redraws one line on a terminal as scenarios start and end,
// and prints each failure as it comes.
func progressLine(w io.Writer) func(scenarios.Event) {
	running := map[string]bool{}
	return func(ev scenarios.Event) {
		id := ev.Suite + "/" + ev.Scenario
		if ev.Result == nil {
			running[id] = true
		} else {
			delete(running, id)
		}
		fmt.Fprint(w, "\r\033[K")
		if ev.Result != nil && ev.Result.Status == scenarios.Failed {
			fmt.Fprintln(w, ev.Result.Line())
		}
		if ev.Done < ev.Total {
			names := make([]string, 0, len(running))
			for n := range running {
				names = append(names, n)
			}
			slices.Sort(names)
			fmt.Fprintf(w, "[%d/%d] %s", ev.Done, ev.Total, strings.Join(names, ", "))
		}
	}
}

// sources are where the run's world is, from the flags: the node is
// evaluated from its sources only where they are given or a cluster
// needs it; a local inventory's factsFile states it otherwise.
func (o *ScenariosRunOptions) sources() world.Sources {
	src := world.Sources{Inventory: o.Inventory, Kubeconfig: o.Kubeconfig, InCluster: o.InCluster, Namespace: o.Namespace, Node: o.Node, Log: o.IO.ErrOut}
	if len(o.Args) > 0 || o.Sources.Given() || o.Kubeconfig != "" || o.InCluster {
		src.LoadNode = func(ctx context.Context, name string) (*facts.Node, error) {
			return o.Sources.LoadNode(ctx, o.Args, o.IO.ErrOut, name)
		}
	}
	return src
}
