// Package world is the deployment as the suites see it: a local
// environment's files, or a cluster.
//
// A run opens one world (Open) from the command's sources and asks it of
// the pods: a container's status and history, a secret file, the node's
// own files, a sidecar's restart, a port. No suite asks which world it is
// in; a suite that reads a cluster's objects takes them from Cluster,
// which is nil where there is none.
package world

import (
	"context"
	"net"
	"time"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/inventory"
)

// World is what the suites ask of a deployment's pods.
type World interface {
	// Inventory is where things are, reconciled with the node.
	Inventory() *inventory.Inventory
	// Cluster is the cluster's view, for the suites that read its
	// objects; nil in a world with no cluster.
	Cluster() *Cluster
	// Status reads what a pod reports of one of its containers.
	Status(ctx context.Context, pod inventory.Endpoint, c Container) (*inventory.PodStatus, error)
	// StatusWhere names where Status looks, for a probe.
	StatusWhere(pod inventory.Endpoint, c Container) string
	// ReadSecret reads a file of the pod's /run/secrets.
	ReadSecret(ctx context.Context, pod inventory.Endpoint, file string) ([]byte, error)
	// SecretWhere names where ReadSecret reads, for a probe.
	SecretWhere(pod inventory.Endpoint, file string) string
	// SecretTimes are the times the pod's secret files were last written.
	SecretTimes(ctx context.Context, pod inventory.Endpoint, files []string) (map[string]time.Time, error)
	// NodeFile reads a file of the node by its path in the node, in the
	// main pod.
	NodeFile(ctx context.Context, main inventory.Endpoint, file string) ([]byte, error)
	// RestartSidecar restarts a pod's sidecar, as its crash would.
	RestartSidecar(ctx context.Context, pod inventory.Endpoint) error
	// IdentityNotReadable says whether the pod's service cannot read the
	// pod's identity: notes when it cannot, an error when it can.
	IdentityNotReadable(ctx context.Context, pod inventory.Endpoint) ([]string, error)
	// Lacks says why the world cannot look at a pod for what needs asks
	// ("" when it can).
	Lacks(pod inventory.Endpoint, needs Needs) string
	// Probe adds a probe of spec to the pod, in its network; nil where
	// the pods share the runner's network.
	Probe(ctx context.Context, pod inventory.Endpoint, spec kube.ProbeSpec) (*kube.Probe, error)
	// Resolve is what host resolves to in the pod, through its own
	// resolver (its /etc/hosts, search domains, DNS); nil where the pod
	// has no tool to ask, and the caller judges by the name.
	Resolve(ctx context.Context, pod inventory.Endpoint, host string) ([]string, error)
	// FinerClock reads, finer than the kubelet's second, when the pod's
	// service container started (its first process, and the first one
	// that started under it) and when its secret files were written;
	// false where the world cannot.
	FinerClock(ctx context.Context, pod inventory.Endpoint, files []string) (clock PodClock, ok bool, err error)
	// KubeletStop is the kubelet's word that it stopped the pod's
	// container during the run that exit ended (a failed liveness
	// probe, a changed spec); "" where it said none, or where the world
	// has no kubelet.
	KubeletStop(ctx context.Context, pod inventory.Endpoint, c Container, exit *inventory.Exit) (string, error)
	// RenderInterval is how often the pod's agent renders a KV entry
	// again, and where that was read.
	RenderInterval(ctx context.Context, pod inventory.Endpoint) (time.Duration, string, error)
	// Locate judges where host:port, which pod (of role) connects to,
	// leads as the pod sees it, and how the runner reaches it there.
	Locate(ctx context.Context, pod inventory.Endpoint, role, host string, port int) (*Place, error)
	// Dial connects to a port of a pod or Service as the runner reaches
	// it: its port-forward from outside a cluster, its address inside.
	Dial(ctx context.Context, e inventory.Endpoint, port int) (net.Conn, error)
	// Close stops what the world holds open (port-forwards).
	Close()
}

// Container is a container of a pod that the suites ask about.
type Container int

const (
	// Service runs the pod's service.
	Service Container = iota
	// Sidecar runs the OpenBao agent.
	Sidecar
)

// Needs are what a scenario looks at in a pod.
type Needs int

const (
	// NeedsStatusAndSecrets: the service's status and the secret files.
	NeedsStatusAndSecrets Needs = iota
	// NeedsRoot: the pod's file system.
	NeedsRoot
	// NeedsSidecar: the sidecar's status and its restart, besides the
	// service's status and the secret files.
	NeedsSidecar
	// NeedsServiceStatus: the service's status alone.
	NeedsServiceStatus
	// NeedsSidecarStatus: the sidecar's status alone.
	NeedsSidecarStatus
)

// PodClock is what a pod's own clock says of its service container's
// start and of its secret files.
type PodClock struct {
	// Start is when the container's first process started.
	Start time.Time
	// Under is when the first of the processes that the first one
	// started did (the service under a supervisor or a wrapper, which
	// reads the files first); zero where it started none.
	Under time.Time
	// Written is when each secret file was written, by its name.
	Written map[string]time.Time
}
