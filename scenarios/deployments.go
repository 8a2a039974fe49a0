package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// The deployments suite compares the cluster with the node's plan: every
// planned Deployment exists with its replicas all ready and its image and
// containers, and the Service of each role has exactly the planned ports
// (US1-1, US1-6, US1-8, US1-14).
func init() {
	register(&Suite{
		Name: "deployments",
		Doc:  "the cluster holds the node's plan: Deployments with their replicas ready, images and containers; Services with exactly their ports",
		Scenarios: []*Scenario{
			{
				Name:  "deployments-as-planned",
				Spec:  []string{"US1-1", "US1-6", "US1-14"},
				Doc:   "each planned Deployment exists with the planned replicas all ready, the planned image and containers",
				Skip:  needsCluster,
				Steps: []Step{{Name: "compare each Deployment with the plan", Do: deploymentsAsPlanned}},
			},
			{
				Name:  "services-as-planned",
				Spec:  []string{"US1-8", "SC-004"},
				Doc:   "the Service of each role has exactly the planned ports: the plain LDAP port absent",
				Skip:  needsCluster,
				Steps: []Step{{Name: "compare each Service with the plan", Do: servicesAsPlanned}},
			},
			{
				Name:  "service-units-not-in-node-pods",
				Spec:  []string{"US1-6"},
				Doc:   "no pod of the node's image runs the unit of a modular service that a role runs from the service's image",
				Skip:  needsCluster,
				Steps: []Step{{Name: "ask each pod's systemd for the units of the roles' services", Do: serviceUnitsNotInNodePods}},
			},
		},
	})
}

func needsCluster(inv *inventory.Inventory) string {
	if inv.Cluster == nil {
		return "the inventory has no cluster"
	}
	return ""
}

// clusterView is the inventory's cluster and the node's plan.
type clusterView struct {
	*kube.Client
	node *facts.Node
	plan *plan.Plan
}

// clusterPlan is the inventory's cluster, connected once per run of a
// scenario, with the node's plan.
func clusterPlan(s *State) (*clusterView, error) {
	c, err := stateCluster(s)
	if err != nil || c.plan != nil {
		return c, err
	}
	factsFile := s.Inv.Cluster.FactsFile
	doc, err := facts.ReadFile(factsFile)
	if err != nil {
		return nil, poll.Permanent(fmt.Errorf("facts %s: %w", factsFile, err))
	}
	i := slices.IndexFunc(doc.Nodes, func(n *facts.Node) bool { return n.Name == s.Inv.Node })
	if i < 0 {
		return nil, poll.Permanent(fmt.Errorf("facts %s have no node %s", factsFile, s.Inv.Node))
	}
	p, err := plan.Make(doc.Nodes[i], plan.Options{Namespace: s.Inv.Cluster.Namespace})
	if err != nil {
		return nil, poll.Permanent(err)
	}
	c.node, c.plan = doc.Nodes[i], p
	return c, nil
}

func deploymentsAsPlanned(ctx context.Context, s *State) error {
	c, err := clusterPlan(s)
	if err != nil {
		return err
	}
	client, p := c.Clientset, c.plan
	// Images are the method's (node-surface): compared as relations with
	// the main pod's image, never with the plan's placeholders.
	var nodeImage string
	if main, err := client.AppsV1().Deployments(p.Deployments[0].Namespace).Get(ctx, p.Deployments[0].Name, metav1.GetOptions{}); err == nil {
		nodeImage = imageOf(main.Spec.Template.Spec.Containers, plan.ContainerNode)
	}
	var errs []error
	for _, want := range p.Deployments {
		probe := poll.Probe{Endpoint: "Deployment " + want.Namespace + "/" + want.Name, Expect: fmt.Sprintf("%d ready replicas of containers %s", *want.Spec.Replicas, containerNames(want.Spec.Template.Spec.Containers)), Within: s.Patience}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := client.AppsV1().Deployments(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return discoverError("Deployment", want.Namespace, want.Name, "get", err)
			}
			return compareDeployment(want, got, nodeImage)
		})
		if err == nil {
			s.Note("Deployment %s: %d ready replicas of %s", want.Name, *want.Spec.Replicas, containerNames(want.Spec.Template.Spec.Containers))
		}
		errs = append(errs, err)
	}
	return joinErrors(errs)
}

func containerNames(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func imageOf(cs []corev1.Container, name string) string {
	for _, c := range cs {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// compareDeployment compares a Deployment with the plan: its replicas,
// its containers by name, their images by relation (a pod of the node's
// image runs the main pod's image, nodeImage; a service's container and
// its companion run one image that is not the node's), and its replicas
// ready.
func compareDeployment(want, got *appsv1.Deployment, nodeImage string) error {
	if got.Spec.Replicas == nil || *got.Spec.Replicas != *want.Spec.Replicas {
		return poll.Saw("spec.replicas %v, planned %d", ptrValue(got.Spec.Replicas), *want.Spec.Replicas)
	}
	cs := got.Spec.Template.Spec.Containers
	if w, g := containerNames(want.Spec.Template.Spec.Containers), containerNames(cs); w != g {
		return poll.Saw("containers %s, planned %s", g, w)
	}
	for _, c := range cs {
		switch c.Name {
		case plan.ContainerNode:
			if nodeImage != "" && c.Image != nodeImage {
				return poll.Saw("container node runs image %s, not the main pod's %s", c.Image, nodeImage)
			}
		case plan.ContainerCompanion:
			if c.Image != cs[0].Image {
				return poll.Saw("container companion runs image %s, not the service's %s", c.Image, cs[0].Image)
			}
		default:
			if c.Image == nodeImage {
				return poll.Saw("container %s runs the node's image %s, not its service's", c.Name, c.Image)
			}
		}
	}
	if got.Status.ReadyReplicas != *want.Spec.Replicas {
		return poll.Saw("%d of %d replicas ready", got.Status.ReadyReplicas, *want.Spec.Replicas)
	}
	return nil
}

func ptrValue(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func servicesAsPlanned(ctx context.Context, s *State) error {
	c, err := clusterPlan(s)
	if err != nil {
		return err
	}
	client, p := c.Clientset, c.plan
	var errs []error
	for _, want := range p.Services {
		got, err := client.CoreV1().Services(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, discoverError("Service", want.Namespace, want.Name, "get", err))
			continue
		}
		w, g := servicePorts(want), servicePorts(got)
		if !slices.Equal(w, g) {
			errs = append(errs, fmt.Errorf("the Service %s has ports %s, planned exactly %s", want.Name, strings.Join(g, ","), strings.Join(w, ",")))
			continue
		}
		s.Note("Service %s has exactly %s", want.Name, strings.Join(w, ","))
	}
	return joinErrors(errs)
}

func servicePorts(svc *corev1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	slices.Sort(out)
	return out
}

func serviceUnitsNotInNodePods(ctx context.Context, s *State) error {
	c, err := clusterPlan(s)
	if err != nil {
		return err
	}
	units := map[string]string{}
	for _, r := range c.node.RoleNames() {
		role := c.node.PodRoles.Roles[r]
		if role.Requested() && !role.RunsNodeImage() {
			units[*role.Service] = "service of role " + r
		}
	}
	if len(units) == 0 {
		s.Note("no role of node %s runs a service's image", s.Inv.Node)
		return nil
	}
	return judgeMatrix(ctx, s, c, units, "no unit of a role's service in any of them")
}
