package harnesscmd

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/vmtests/kubenode"
)

// NewServiceProxyCmd is the service proxy of the test cluster's real
// node: env up runs it as a process of the node. Hidden: no one else
// calls it.
func NewServiceProxyCmd(io *cli.Streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:    "service-proxy --kubeconfig FILE",
		Short:  "Serve the test cluster's Services on their cluster IPs, as kube-proxy would",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := kube.Connect(kubeconfig)
			if err != nil {
				return err
			}
			return kubenode.RunServiceProxy(cmd.Context(), c.Clientset, io.ErrOut)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
