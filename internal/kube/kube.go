// Package kube is the Kubernetes client that the scenario suites and the
// test control plane share. It holds a kubeconfig read at kubectl's
// request rate, exec in a pod's container, and port-forwards of a pod's
// ports to loopback, each as kubectl does them (WebSocket first, SPDY
// when the API server or a proxy refuses the upgrade). Errors say in one
// line what was refused, and a missing permission is a poll.Permanent
// error: waiting does not grant it.
package kube

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Client is a client of one cluster, with the config that its streaming
// calls (exec, port-forward) need besides the clientset.
type Client struct {
	Config    *rest.Config
	Clientset kubernetes.Interface
}

// Config reads a kubeconfig; with none, the service account of the pod it
// runs in (--in-cluster).
func Config(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w (outside a pod, give --kubeconfig)", err)
		}
		withRate(cfg)
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	withRate(cfg)
	return cfg, nil
}

// withRate lets a client poll as the suites do (several pods, a few
// times a second each), at kubectl's rate: client-go's default of 5
// requests a second would make a wait fail on the client's own limiter.
func withRate(cfg *rest.Config) {
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 300
	}
}

// Connect makes a client of the cluster a kubeconfig names (the pod's own
// with none).
func Connect(kubeconfig string) (*Client, error) {
	cfg, err := Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return &Client{Config: cfg, Clientset: clientset}, nil
}
