package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/plan"
)

type planOptions struct {
	io            *streams
	sources       sourceOptions
	format        string
	output        string
	opts          plan.Options
	serviceImages []string
}

func newPlanCmd(ios *streams) *cobra.Command {
	o := &planOptions{io: ios}
	cmd := &cobra.Command{
		Use:   "plan [NODE.nix | FACTS.json | FLAKE#NODE ...]",
		Short: "Print the Kubernetes objects the k8s method must make of nodes",
		Long: `Prints, for each node on k8s-pod.nix, the Deployment <node> of the main pod,
and for each requested role the Deployment <node>-<role> with its replicas,
image and containers (the service, the companion, the secrets sidecar) and
the Service <node>-<role> with exactly its ports, each pod template
annotated with the units its pods may run. A node with errors of podroles
check is refused.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.format != "yaml" && o.format != "json" {
				return fmt.Errorf("--format %q: want yaml or json", o.format)
			}
			o.opts.ServiceImages = map[string]string{}
			for _, si := range o.serviceImages {
				s, image, ok := strings.Cut(si, "=")
				if !ok || s == "" || image == "" {
					return fmt.Errorf("--service-image %q: write SERVICE=IMAGE", si)
				}
				o.opts.ServiceImages[s] = image
			}
			nodes, err := o.sources.load(cmd.Context(), args, ios.ErrOut)
			if err != nil {
				return err
			}
			var plans []*plan.Plan
			for _, n := range nodes {
				if e, _ := checks.CheckNode(n, checks.Rules()).Count(); e > 0 {
					return fmt.Errorf("node %s has %d errors: run podroles check on it", n.Name, e)
				}
				p, err := plan.Make(n, o.opts)
				if err != nil {
					return err
				}
				plans = append(plans, p)
			}
			return writeOutput(o.output, ios.Out, func(w io.Writer) error { return plan.Write(w, o.format, plans) })
		},
	}
	o.sources.addFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "yaml", "yaml or json")
	f.StringVarP(&o.output, "output", "o", "", "write the plan to this file")
	f.StringVar(&o.opts.Namespace, "namespace", "", "the namespace of the objects")
	f.StringVar(&o.opts.NodeImage, "node-image", "", "the image of the node (default <node>:latest)")
	f.StringArrayVar(&o.serviceImages, "service-image", nil, "SERVICE=IMAGE, the image of a modular service (repeatable)")
	f.StringVar(&o.opts.SidecarImage, "sidecar-image", "", "the image of the OpenBao agent")
	return cmd
}
