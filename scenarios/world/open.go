package world

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
)

// Sources are where a run's world is, as the command's flags give it.
type Sources struct {
	// Inventory is the inventory file: the whole world of a local run,
	// or, with a cluster, what the cluster cannot tell (optional then).
	Inventory string
	// Kubeconfig or InCluster opens a cluster's world, found in
	// Namespace for the node named Node.
	Kubeconfig string
	InCluster  bool
	Namespace  string
	Node       string
	// LoadNode evaluates the named node from the command's node sources;
	// nil where none were given, and a local inventory's factsFile
	// states the node.
	LoadNode func(ctx context.Context, name string) (*facts.Node, error)
	// Log receives what goes wrong in a port-forward once it runs.
	Log io.Writer
}

// Open opens the world of src: a cluster's (Discover) with Kubeconfig or
// InCluster, else the local inventory's files. It returns the world, its
// inventory reconciled with the node, and what closes the world and
// removes what Open wrote, after the run.
func Open(ctx context.Context, src Sources) (World, *inventory.Inventory, func(), error) {
	if src.Kubeconfig == "" && !src.InCluster {
		inv, err := loadLocal(ctx, src)
		if err != nil {
			return nil, nil, nil, err
		}
		w, err := Local(inv)
		if err != nil {
			return nil, nil, nil, err
		}
		return w, inv, func() {}, nil
	}
	if src.Namespace == "" || src.Node == "" {
		return nil, nil, nil, errors.New("--kubeconfig and --in-cluster need --namespace and --node")
	}
	var base *inventory.Inventory
	if src.Inventory != "" {
		var err error
		if base, err = inventory.LoadBase(src.Inventory); err != nil {
			return nil, nil, nil, err
		}
	}
	if src.LoadNode == nil {
		return nil, nil, nil, fmt.Errorf("a cluster's world needs the node %s: give its flake, file or facts", src.Node)
	}
	node, err := src.LoadNode(ctx, src.Node)
	if err != nil {
		return nil, nil, nil, err
	}
	dir, err := os.MkdirTemp("", "podroles-discovered-")
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := Discover(ctx, DiscoverOptions{
		Kubeconfig: src.Kubeconfig, Namespace: src.Namespace, Node: node, Dir: dir,
		Base: base, Direct: src.InCluster, ServicesByName: src.InCluster, Log: src.Log,
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return c, c.inv, func() { c.Close(); os.RemoveAll(dir) }, nil
}

// loadLocal reads the inventory file and takes what the node states from
// the node's sources, if given, or from its factsFile.
func loadLocal(ctx context.Context, src Sources) (*inventory.Inventory, error) {
	if src.LoadNode == nil {
		return inventory.Load(src.Inventory, nil)
	}
	base, err := inventory.LoadBase(src.Inventory)
	if err != nil {
		return nil, err
	}
	name := src.Node
	if name == "" {
		name = base.Node
	}
	node, err := src.LoadNode(ctx, name)
	if err != nil {
		return nil, err
	}
	return inventory.Load(src.Inventory, node)
}

// Local is the world of a local inventory (Files), with the cluster it
// names (cluster:), where the node's objects are read; its pods are the
// inventory's.
func Local(inv *inventory.Inventory) (World, error) {
	w := filesWorld{inv: inv}
	if inv.Cluster == nil {
		return w, nil
	}
	if inv.Facts == nil {
		return nil, fmt.Errorf("inventory: cluster: the inventory has no node's facts to plan from")
	}
	c, err := kube.Connect(inv.Cluster.Kubeconfig)
	if err != nil {
		return nil, err
	}
	p, err := plan.Make(inv.Facts, plan.Options{Namespace: inv.Cluster.Namespace})
	if err != nil {
		return nil, fmt.Errorf("inventory: cluster: %w", err)
	}
	w.cluster = &Cluster{Client: c, Namespace: inv.Cluster.Namespace, Node: inv.Facts, Plan: p, inv: inv, inside: inv.Cluster.Kubeconfig == ""}
	return w, nil
}
