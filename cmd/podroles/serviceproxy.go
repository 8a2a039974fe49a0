package main

import (
	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/vmtests/kubenode"
)

// newServiceProxyCmd is the service proxy of the test cluster's real
// node: env up runs it as a process of the node. Hidden: no one else
// calls it.
func newServiceProxyCmd(io *streams) *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{
		Use:    "service-proxy --kubeconfig FILE",
		Short:  "Serve the test cluster's Services on their cluster IPs, as kube-proxy would",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, _, err := scenarios.ClusterClient(kubeconfig)
			if err != nil {
				return err
			}
			return kubenode.RunServiceProxy(cmd.Context(), client, io.ErrOut)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "the cluster's kubeconfig (required)")
	cmd.MarkFlagRequired("kubeconfig")
	return cmd
}
