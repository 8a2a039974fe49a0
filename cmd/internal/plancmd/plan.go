// Package plancmd is podroles plan: the Kubernetes objects of nodes.
//
// It is a package of its own, apart from the node commands, so that
// podroles-check links none of Kubernetes' types; podroles has it.
package plancmd

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/kubeflag"
	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/imageref"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/report"
)

// Options are podroles plan's.
type Options struct {
	IO      *cli.Streams
	Sources cli.SourceOptions
	// Args are the nodes named without a flag.
	Args   []string
	Format string
	Output string
	Plan   plan.Options
	// ServiceImages are --service-image's SERVICE=IMAGE, which fill
	// Plan.ServiceImages.
	ServiceImages []string
	// NodeImages are --node-image's NODE=IMAGE, or one IMAGE for a plan of
	// one node, which fill Plan.NodeImage node by node.
	NodeImages []string
}

// NewCmd is podroles plan.
func NewCmd(ios *cli.Streams) *cobra.Command {
	o := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "plan [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Print the Kubernetes objects the k8s method must make of nodes",
		Long: `Prints, for each node on k8s-pod.nix, the Deployment <node> of the main pod,
and for each requested role the Deployment <node>-<role> with its replicas,
image and containers (the service with its variables, the companion, the
OpenBao agent as a sidecar that starts first and alone holds the pod's
identity) and the Service <node>-<role> with exactly its ports, each pod
template annotated with the units its pods may run. A node with errors of
podroles check is refused.

Image references not given by --node-image (NODE=IMAGE for each node, or
one IMAGE for a plan of one node), --service-image or --sidecar-image are
placeholders, named in the YAML's comments (on standard
error with --format json).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			return Run(cmd.Context(), o)
		},
	}
	o.Sources.AddFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "yaml", "yaml or json")
	cli.OutputVar(f, &o.Output, "write the plan to this file")
	f.StringVar(&o.Plan.Namespace, "namespace", "", "the namespace of the objects")
	f.StringArrayVar(&o.NodeImages, "node-image", nil, "NODE=IMAGE, the image of a node (repeatable; default <node>:latest); a bare IMAGE when one node is planned")
	f.StringArrayVar(&o.ServiceImages, "service-image", nil, "SERVICE=IMAGE, the image of a modular service (repeatable)")
	f.StringVar(&o.Plan.SidecarImage, "sidecar-image", "", "the image of the OpenBao agent")
	return cmd
}

// Run plans the nodes and writes the objects; a node with errors of
// podroles check is refused.
func Run(ctx context.Context, o *Options) error {
	if o.Format != "yaml" && o.Format != "json" {
		return fmt.Errorf("--format %q: want yaml or json", o.Format)
	}
	if err := o.Sources.CheckOutput(o.Output, o.Args); err != nil {
		return err
	}
	if err := kubeflag.CheckNamespace(o.Plan.Namespace); err != nil {
		return err
	}
	opts := o.Plan
	opts.ServiceImages = map[string]string{}
	for _, si := range o.ServiceImages {
		s, image, ok := strings.Cut(si, "=")
		if !ok || s == "" || image == "" {
			return fmt.Errorf("--service-image %q: write SERVICE=IMAGE", si)
		}
		if err := imageRef("--service-image "+si, image); err != nil {
			return err
		}
		opts.ServiceImages[s] = image
	}
	if opts.SidecarImage != "" {
		if err := imageRef("--sidecar-image", opts.SidecarImage); err != nil {
			return err
		}
	}
	for _, v := range o.NodeImages {
		_, image, named := strings.Cut(v, "=")
		if !named {
			image = v
		}
		if err := imageRef("--node-image "+v, image); err != nil {
			return err
		}
	}
	nodes, err := o.Sources.Load(ctx, o.Args, o.IO.ErrOut)
	if err != nil {
		return err
	}
	if err := servicesRun(nodes, opts.ServiceImages); err != nil {
		return err
	}
	nodeImages, err := nodeImagesOf(o.NodeImages, nodes)
	if err != nil {
		return err
	}
	if opts.SidecarImage != "" && !anySidecar(nodes) {
		return fmt.Errorf("--sidecar-image %s: no requested role of the nodes has secrets, so no pod runs the OpenBao agent", opts.SidecarImage)
	}
	plans, err := planAll(nodes, opts, nodeImages)
	if err != nil {
		return err
	}
	if note := plan.PlaceholderNote(plans); note != "" && o.Format != "yaml" {
		fmt.Fprintf(o.IO.ErrOut, "podroles plan: %s\n", note)
	}
	return cli.WriteOutput(ctx, o.Output, o.IO.Out, func(w io.Writer) error { return plan.Write(w, o.Format, plans) })
}

// planAll plans each node; a node with errors of podroles check is refused,
// named with its first error. The nodes are checked together, as check
// checks them: two nodes whose objects collide (PR614) are refused.
func planAll(nodes []*facts.Node, opts plan.Options, nodeImages map[string]string) ([]*plan.Plan, error) {
	var plans []*plan.Plan
	for i, res := range checks.Check(nodes) {
		if e, _ := res.Count(); e > 0 {
			first := res.Findings[slices.IndexFunc(res.Findings, func(f checks.Finding) bool { return f.Severity == checks.SeverityError })]
			return nil, fmt.Errorf("node %s has %s, first %s %s: %s; run podroles check on the same nodes", res.Node, report.Count(e, "error"), first.Rule, first.Subject, first.Message)
		}
		opts.NodeImage = nodeImages[nodes[i].Name]
		p, err := plan.Make(nodes[i], opts)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// nodeImagesOf reads --node-image: NODE=IMAGE for a node planned, or one
// bare IMAGE when one node is. A bare image for several nodes would give
// every node that image, without a word.
func nodeImagesOf(values []string, nodes []*facts.Node) (map[string]string, error) {
	images := map[string]string{}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	for _, v := range values {
		node, image, named := strings.Cut(v, "=")
		switch {
		case !named && len(nodes) == 1:
			node, image = nodes[0].Name, v
		case !named:
			return nil, fmt.Errorf("--node-image %s: %d nodes are planned (%s); name the node: --node-image NODE=IMAGE", v, len(nodes), strings.Join(names, ", "))
		case node == "" || image == "":
			return nil, fmt.Errorf("--node-image %q: write NODE=IMAGE", v)
		case !slices.Contains(names, node):
			return nil, fmt.Errorf("--node-image %s: no node %s is planned; the nodes are %s", v, node, strings.Join(names, ", "))
		}
		if _, twice := images[node]; twice {
			return nil, fmt.Errorf("--node-image %s: node %s has an image already; give each node one", v, node)
		}
		images[node] = image
	}
	return images, nil
}

// imageRef refuses an image reference that a container runtime would
// refuse, before any evaluation: the flag that gave it is named.
func imageRef(flag, image string) error {
	if err := imageref.Check(image); err != nil {
		return fmt.Errorf("%s: %q is no image reference (%v), e.g. registry.example.org/mastodon:1.2", flag, image, err)
	}
	return nil
}

// anySidecar says a requested role of the nodes has secrets, whose pods
// run the OpenBao agent.
func anySidecar(nodes []*facts.Node) bool {
	for _, n := range nodes {
		for _, r := range n.PodRoles.Roles {
			if r.Requested() && len(r.Secrets) > 0 {
				return true
			}
		}
	}
	return false
}

// servicesRun refuses a --service-image for a service that no role of
// the nodes runs: a misspelled service would leave its role on a
// placeholder image without a word.
func servicesRun(nodes []*facts.Node, images map[string]string) error {
	run := map[string]bool{}
	for _, n := range nodes {
		for _, r := range n.PodRoles.Roles {
			if r.Service != nil {
				run[*r.Service] = true
			}
		}
	}
	for _, s := range slices.Sorted(maps.Keys(images)) {
		if !run[s] {
			known := slices.Sorted(maps.Keys(run))
			if len(known) == 0 {
				return fmt.Errorf("--service-image %s=%s: no role of the nodes runs a modular service", s, images[s])
			}
			return fmt.Errorf("--service-image %s=%s: no role runs service %s; the roles run %s", s, images[s], s, strings.Join(known, ", "))
		}
	}
	return nil
}
