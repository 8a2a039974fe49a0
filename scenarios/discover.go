package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// Discover builds the inventory of node from a cluster: for each
// Deployment of the node's plan, its pods (found by the Deployment's own
// selector, not by guessed labels) and its Service with its ports. The
// node's facts are written to dir, where the cluster suites read them.
func Discover(ctx context.Context, kubeconfig, namespace string, node *nixeval.Node, dir string) (*inventory.Inventory, error) {
	p, err := plan.Make(node, plan.Options{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	client, host, err := ClusterClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	if _, err := client.Discovery().ServerVersion(); err != nil {
		return nil, fmt.Errorf("the API server %s does not answer: %v", host, oneLine(err))
	}
	facts := filepath.Join(dir, "facts.json")
	data, _ := json.Marshal(nixeval.Document{Version: nixeval.FactsVersion, Nodes: []*nixeval.Node{node}})
	if err := os.WriteFile(facts, data, 0o600); err != nil {
		return nil, err
	}
	inv := &inventory.Inventory{
		Node:    node.Name,
		Roles:   map[string]*inventory.Role{},
		Cluster: &inventory.Cluster{Kubeconfig: kubeconfig, Namespace: namespace, FactsFile: facts},
	}
	for _, want := range p.Deployments {
		d, err := client.AppsV1().Deployments(namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, discoverError("Deployment", namespace, want.Name, "get", err)
		}
		role := want.Spec.Template.Labels[plan.LabelRole]
		r := &inventory.Role{}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			r.Server = d.Spec.Template.Spec.Containers[0].Name
		}
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("the selector of Deployment %s/%s: %w", namespace, want.Name, err)
		}
		pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return nil, discoverError("Pod", namespace, want.Name+"-*", "list", err)
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" {
				continue
			}
			r.Pods = append(r.Pods, inventory.Endpoint{Name: pod.Name, Address: pod.Status.PodIP})
		}
		if svc, err := client.CoreV1().Services(namespace).Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
			ports := map[string]int{}
			for _, sp := range svc.Spec.Ports {
				ports[sp.Name] = int(sp.Port)
			}
			r.Service = &inventory.Endpoint{Name: fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, namespace), Address: svc.Spec.ClusterIP, Ports: ports}
		} else if !apierrors.IsNotFound(err) {
			return nil, discoverError("Service", namespace, want.Name, "get", err)
		}
		inv.Roles[role] = r
	}
	return inv, nil
}

// ClusterClient returns a client of the cluster a kubeconfig names, and
// the API server's address.
func ClusterClient(kubeconfig string) (kubernetes.Interface, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return client, cfg.Host, nil
}

// discoverError says in one line which object could not be read and why:
// missing, or which permission the kubeconfig's user lacks.
func discoverError(kind, namespace, name, verb string, err error) error {
	plural := strings.ToLower(kind) + "s"
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %s/%s does not exist: is the node deployed to namespace %s?", kind, namespace, name, namespace)
	case apierrors.IsForbidden(err):
		// Waiting does not grant a permission.
		return Permanent(fmt.Errorf("%s %s/%s: forbidden: the kubeconfig's user needs %s on %s in namespace %s", kind, namespace, name, verb, plural, namespace))
	}
	return fmt.Errorf("%s %s/%s: %v", kind, namespace, name, oneLine(err))
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
