package world

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
)

// DiscoverOptions say where a node's world is in a cluster.
type DiscoverOptions struct {
	// Kubeconfig is the cluster's kubeconfig; empty in a pod, where the
	// pod's service account reaches the API server (--in-cluster).
	Kubeconfig string
	Namespace  string
	Node       *facts.Node
	// Dir is where the node's facts are written, for the cluster suites.
	Dir string
	// Base holds what neither the cluster nor the node can tell: the
	// ldap contract's port and DNs, Postgres, OpenBao, the portal, with
	// the files of their secrets. Its roles are replaced by those found,
	// and what the node states is taken from Node.
	Base *inventory.Inventory
	// Direct dials the pods' and Services' own addresses (inside the
	// cluster); otherwise every port is port-forwarded to loopback.
	Direct bool
	// ServicesByName, with Direct, dials each Service by its name, as a
	// pod of the cluster resolves it (--in-cluster): a runner in a pod
	// reaches a Service as the node's readers do.
	ServicesByName bool
	// Log receives, a line each, what goes wrong in a port-forward once
	// it runs (a connection the pod refuses, the forward lost); nil drops
	// it.
	Log io.Writer
}

// Discover opens a node's world in a cluster, with its inventory: for each
// Deployment of the node's plan, its pods (found by the Deployment's own
// selector, not by guessed labels) with their UIDs and service container,
// and its Service with its ports. From outside the cluster each pod port
// is forwarded to a loopback port through the API server, and each
// Service port to a ready pod that the Service's own selector puts behind
// it, so that the suites never dial a cluster address, and reach through a
// Service only the pods it leads to.
func Discover(ctx context.Context, o DiscoverOptions) (_ *Cluster, err error) {
	p, err := plan.Make(o.Node, plan.Options{Namespace: o.Namespace})
	if err != nil {
		return nil, err
	}
	c, err := kube.Connect(o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg, client := c.Config, c.Clientset
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("the API server %s does not answer: %v", cfg.Host, oneline.Err(err))
	}
	factsFile := filepath.Join(o.Dir, "facts.json")
	data, err := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{o.Node}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(factsFile, data, 0o600); err != nil {
		return nil, err
	}
	inv := &inventory.Inventory{}
	if o.Base != nil {
		*inv = *o.Base
	}
	inv.Node, inv.FactsFile = o.Node.Name, factsFile
	inv.Roles = map[string]*inventory.Role{}
	inv.Cluster = &inventory.Cluster{Kubeconfig: o.Kubeconfig, Namespace: o.Namespace}
	d := &Cluster{Client: c, Namespace: o.Namespace, Node: o.Node, Plan: p, inv: inv, inside: o.Kubeconfig == ""}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	fw := forwarder{client: c, namespace: o.Namespace, log: o.Log}
	for _, want := range p.Deployments {
		dep, err := client.AppsV1().Deployments(o.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, ObjectError("Deployment", o.Namespace, want.Name, "get", err)
		}
		roleName := want.Spec.Template.Labels[names.LabelRole]
		// The container of the pod's service, by the contract's name: the
		// service's, or node.
		service := plan.ContainerNode
		if r := o.Node.PodRoles.Roles[roleName]; !r.RunsNodeImage() {
			service = *r.Service
		}
		role := &inventory.Role{}
		if base := o.Base; base != nil && base.Roles[roleName] != nil {
			role.StandIn = base.Roles[roleName].StandIn
		}
		pods, err := RunningPods(ctx, client, dep)
		if err != nil {
			return nil, err
		}
		for _, pod := range pods {
			e := inventory.Endpoint{Name: pod.Name, Address: pod.Status.PodIP, UID: string(pod.UID), Container: service, Ports: map[string]int{}}
			var ports []int32
			for _, c := range pod.Spec.Containers {
				for _, cp := range c.Ports {
					e.Ports[cp.Name] = int(cp.ContainerPort)
					ports = append(ports, cp.ContainerPort)
				}
			}
			switch {
			case o.Direct:
			case len(ports) == 0:
				// From outside, a cluster address is never dialled.
				e.Forwarded, e.Unreachable = map[int]string{}, "the pod declares no ports"
			default:
				if e.Forwarded, err = fw.forward(ctx, d, pod.Name, ports, ports); err != nil {
					return nil, err
				}
			}
			role.Pods = append(role.Pods, e)
		}
		svc, err := client.CoreV1().Services(o.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case err == nil:
			e := &inventory.Endpoint{Name: fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, o.Namespace), Address: svc.Spec.ClusterIP, Ports: map[string]int{}, ByName: o.Direct && o.ServicesByName}
			for _, sp := range svc.Spec.Ports {
				e.Ports[sp.Name] = int(sp.Port)
			}
			if !o.Direct {
				// The pods the Service itself leads to, which need not
				// be the Deployment's.
				behind, err := BackendsOf(ctx, client, svc)
				if err != nil {
					return nil, err
				}
				if e.Forwarded, e.Unreachable, err = fw.forwardService(ctx, d, svc, behind); err != nil {
					return nil, err
				}
			}
			role.Service = e
		case !apierrors.IsNotFound(err):
			return nil, ObjectError("Service", o.Namespace, want.Name, "get", err)
		}
		inv.Roles[roleName] = role
	}
	if err := inv.Reconcile(o.Node); err != nil {
		return nil, fmt.Errorf("the inventory found in namespace %s: %w", o.Namespace, err)
	}
	if err := inv.Validate(); err != nil {
		return nil, fmt.Errorf("the inventory found in namespace %s: %w", o.Namespace, err)
	}
	return d, nil
}

// RunningPods are the Running pods of a Deployment, by its selector, in
// name order.
func RunningPods(ctx context.Context, client kubernetes.Interface, dep *appsv1.Deployment) ([]corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("the selector of Deployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	list, err := client.CoreV1().Pods(dep.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, ObjectError("Pod", dep.Namespace, dep.Name+"-*", "list", err)
	}
	pods := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool {
		return p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == ""
	})
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods, nil
}

// ObjectError says in one line which object could not be read and why:
// missing, or which permission the kubeconfig's user lacks.
func ObjectError(kind, namespace, name, verb string, err error) error {
	plural := strings.ToLower(kind) + "s"
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s/%s does not exist: is the node deployed to namespace %s?", kind, namespace, name, namespace)
	case apierrors.IsForbidden(err):
		// Waiting does not grant a permission.
		return poll.Permanent(kube.Forbidden(fmt.Sprintf("%s %s/%s", kind, namespace, name), verb+" on "+plural, namespace))
	}
	// A timeout or a busy API server is no answer, which a wait retries.
	return fmt.Errorf("%s %s/%s: %w", kind, namespace, name, kube.Answered(err))
}
