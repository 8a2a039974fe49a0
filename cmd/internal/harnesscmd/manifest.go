package harnesscmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/kubeflag"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios"
)

// ScenariosManifestOptions are podroles scenarios manifest's.
type ScenariosManifestOptions struct {
	IO        *cli.Streams
	Namespace string
	Node      string
	Image     string
	Inventory string
	Sources   cli.SourceOptions
	// Args are the node's sources named without a flag.
	Args []string
	SelectionOptions
	ReportClaim string
	Outside     bool
	FromRunner  bool
	Output      string
}

// NewScenariosManifestCmd is podroles scenarios manifest.
func NewScenariosManifestCmd(ios *cli.Streams) *cobra.Command {
	o := &ScenariosManifestOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "manifest --namespace NS (--node NODE --image IMAGE SOURCES | --outside)",
		Short: "Print the objects that run the suites as a Job in the node's namespace",
		Long: `Prints, as YAML, what a platform applies to run the suites as a
Kubernetes Job in the node's namespace: a ServiceAccount, a Role, a
RoleBinding, a ConfigMap with the node's facts (and the --inventory base,
if given) and the Job, which runs scenarios run --in-cluster in --image
(whose entrypoint is podroles). The Job writes the text report to the
pod's log and the JSON report to /report/report.json, an emptyDir, or the
PersistentVolumeClaim of --report-claim.

The Role grants exactly what the selected scenarios use (--suite, --run
and --disruptive select as they do for scenarios run), derived from the
scenarios' own declarations; a comment above it names who needs each
permission. The Job's runner adds its own image to the node's main pod
as an ephemeral container, the reader that service-ldaps-bind connects
from; --from-runner connects from the runner's pod instead, and drops
that access. A runner in the cluster dials the pods and Services itself,
so it needs no port-forward; --outside prints the ServiceAccount, Role
and RoleBinding of a runner outside the cluster (scenarios run
--kubeconfig, with a token of the ServiceAccount), whose Role adds create
on pods/portforward, and no Job.`,
		Example: `  podroles scenarios manifest --namespace directory --node directory --image registry.example/podroles:1.0 --flake .#directory | kubectl apply -f -
  kubectl -n directory logs -f job/podroles-scenarios
  podroles scenarios manifest --namespace directory --node directory --image IMAGE --facts facts.json --suite deployments,units --disruptive
  podroles scenarios manifest --namespace directory --outside --suite deployments,units`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return RunScenariosManifest(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Namespace, "namespace", "", "the node's namespace, where the runner runs")
	f.StringVar(&o.Node, "node", "", "the node, among the sources")
	f.StringVar(&o.Image, "image", "", "the runner's image, whose entrypoint is podroles")
	f.StringVar(&o.Inventory, "inventory", "", "an inventory base for the runner (what neither the cluster nor the node can tell); the files it names must be mounted into the Job at the same paths")
	o.SelectionOptions.AddFlags(f, "also run the scenarios that change the deployment, and grant what they need")
	f.StringVar(&o.ReportClaim, "report-claim", "", "keep the report file on this PersistentVolumeClaim (default: an emptyDir)")
	f.BoolVar(&o.Outside, "outside", false, "the access of a runner outside the cluster, which port-forwards: ServiceAccount, Role and RoleBinding only")
	f.BoolVar(&o.FromRunner, "from-runner", false, "the runner connects from its own pod and adds no probe to the main pod: no access to ephemeral containers or attach")
	cli.OutputVar(f, &o.Output, "write the manifest to this file")
	o.Sources.AddFlags(cmd)
	return cmd
}

// RunScenariosManifest writes the manifest of a runner of the suites.
func RunScenariosManifest(ctx context.Context, o *ScenariosManifestOptions) error {
	suites, re, err := o.check()
	if err != nil {
		return err
	}
	var base []byte
	disruptive := o.Disruptive
	if o.Inventory != "" {
		// Read once: the manifest carries the very bytes it judged.
		if base, err = os.ReadFile(o.Inventory); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("inventory %s: no such file", o.Inventory)
		} else if err != nil {
			return fmt.Errorf("inventory %s: %w", o.Inventory, err)
		}
		inv, err := inventory.ParseBase(base, o.Inventory)
		if err != nil {
			return err
		}
		// The runner runs the disruptive scenarios for the base's
		// disruptive: true as for --disruptive: the Role grants them.
		disruptive = disruptive || inv.Disruptive
	}
	var node *facts.Node
	if !o.Outside {
		var err error
		if node, err = o.Sources.LoadNode(ctx, o.Args, o.IO.ErrOut, o.Node); err != nil {
			return err
		}
	}
	m, err := scenarios.MakeManifest(scenarios.ManifestOptions{
		Namespace: o.Namespace, Node: node, Image: o.Image, Suites: suites, Run: re,
		Disruptive: disruptive, Base: base, ReportClaim: o.ReportClaim, Outside: o.Outside, FromRunner: o.FromRunner,
	})
	if err != nil {
		return err
	}
	return cli.WriteOutput(ctx, o.Output, o.IO.Out, func(w io.Writer) error { return m.Write(w) })
}

// check refuses flags that cannot make a manifest, before any node is
// evaluated, and gives the scenarios they select.
func (o *ScenariosManifestOptions) check() ([]*scenarios.Suite, *regexp.Regexp, error) {
	if o.Namespace == "" {
		return nil, nil, fmt.Errorf("give --namespace: the node's namespace, where the runner runs")
	}
	if err := kubeflag.CheckNamespace(o.Namespace); err != nil {
		return nil, nil, err
	}
	if err := cli.CheckOutput(o.Output); err != nil {
		return nil, nil, err
	}
	suites, re, err := o.Select()
	if err != nil {
		return nil, nil, err
	}
	if o.Outside {
		if o.Image != "" || o.Inventory != "" || o.ReportClaim != "" {
			return nil, nil, fmt.Errorf("--outside prints no Job: it takes no --image, --inventory or --report-claim")
		}
		return suites, re, nil
	}
	switch {
	case o.Node == "":
		return nil, nil, fmt.Errorf("give --node: the node whose suites the Job runs")
	case o.Image == "":
		return nil, nil, fmt.Errorf("give --image: the runner's image, whose entrypoint is podroles")
	case len(o.Args) == 0 && !o.Sources.Given():
		return nil, nil, fmt.Errorf("give the node's sources (--flake, --file or --facts): the Job runs on its facts")
	}
	return suites, re, nil
}
