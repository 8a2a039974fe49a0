package checks

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/plan/names"
)

// planned is a Deployment, and the Service beside it, that the plan of a
// node makes. The names and labels are the plan's own (package names), so
// that the rules compare what `podroles plan` makes and not a copy of it.
type planned struct {
	node string
	// role is "" for the main pod.
	role       string
	deployment string
	// service is the role's Service, or "" for none.
	service string
	// labels are those of the pods, by which the Deployment and the
	// Service select them.
	labels map[string]string
}

// plannedObjects returns what the plan of a node named name makes: the main
// pod's Deployment first, then each requested role's, of roles (sorted).
func plannedObjects(n *facts.Node, name string, roles []string) []planned {
	out := make([]planned, 1, len(roles)+1)
	out[0] = planned{node: name, deployment: names.MainName(name), labels: names.Labels(name, names.MainRole)}
	for _, r := range roles {
		role := n.PodRoles.Roles[r]
		if !role.Requested() {
			continue
		}
		o := planned{node: name, role: r, deployment: names.RoleName(name, r), labels: names.Labels(name, r)}
		if names.HasService(role) {
			o.service = o.deployment
		}
		out = append(out, o)
	}
	return out
}

// selector writes labels as a selector, sorted: "key=value, key=value".
func selector(labels map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k+"="+labels[k])
	}
	return strings.Join(out, ", ")
}

// objects names the object or objects of o: "the Deployment a-b and the
// Service a-b".
func (o planned) objects() string {
	if o.service == "" {
		return "the Deployment " + o.deployment
	}
	return fmt.Sprintf("the Deployment %s and the Service %s", o.deployment, o.service)
}

// owner names what makes o: "the main pod", "role r".
func (o planned) owner() string {
	if o.role == "" {
		return "the main pod"
	}
	return "role " + o.role
}

// pods names o's pods: "the main pod", "the pods of role r".
func (o planned) pods() string {
	if o.role == "" {
		return "the main pod"
	}
	return "the pods of role " + o.role
}

// fleet is the Deployments that the plans of the nodes checked together
// make, by name (PR614).
type fleet map[string][]planned

// fleetOf indexes the Deployments of nodes. A node off k8s-pod.nix makes
// none, and one named after its file has a name podroles made up, so
// neither is in it.
func fleetOf(nodes []*facts.Node) fleet {
	if len(nodes) < 2 {
		return nil
	}
	f := fleet{}
	for _, n := range nodes {
		if !n.K8sPod.Enable || n.NamedAfterFile {
			continue
		}
		for _, o := range plannedObjects(n, n.Name, n.RoleNames()) {
			f[o.deployment] = append(f[o.deployment], o)
		}
	}
	return f
}

// roleMaking is where role r is defined, else its request, which makes its
// Deployment: a role merged from several definitions has no place of its
// own in a plain config.
func roleMaking(r string) place { return at(roleOpt(r), roleOpt(r, "replicas")) }

func roleCollidesInPlan(n *node, report reportFunc) {
	name := n.Name
	if n.NamedAfterFile {
		name = "<node>" // a made-up name would only confuse
	}
	objs := plannedObjects(n.Node, name, n.roles)
	for i, o := range objs {
		for _, p := range objs[:i] {
			var clashes, effects []string
			if o.deployment == p.deployment {
				clashes = append(clashes, fmt.Sprintf("the Deployment %s is also that of %s", o.deployment, p.owner()))
				effects = append(effects, "one object of a name would replace the other")
			}
			if o.service != "" && o.service == p.service {
				clashes = append(clashes, fmt.Sprintf("the Service %s is also that of %s", o.service, p.owner()))
			}
			if maps.Equal(o.labels, p.labels) {
				clashes = append(clashes, fmt.Sprintf("its pods have the labels of %s (%s), which the Deployment %s selects", p.pods(), selector(o.labels), p.deployment))
				effect := fmt.Sprintf("the Deployments %s and %s would each take the other's pods for its own", p.deployment, o.deployment)
				if o.service != "" {
					effect += fmt.Sprintf(", and the Service %s would send connections to %s too", o.service, p.pods())
				}
				effects = append(effects, effect)
			}
			if len(clashes) > 0 {
				report(role(o.role), roleMaking(o.role), "role %s makes %s, but %s: %s; rename the role", o.role, o.objects(), joinAnd(clashes), strings.Join(effects, "; "))
			}
		}
	}
}

func roleCollidesWithOtherNode(n *node, report reportFunc) {
	if n.NamedAfterFile || len(n.fleet) == 0 {
		return
	}
	for _, o := range plannedObjects(n.Node, n.Name, n.roles)[1:] {
		for _, p := range n.fleet[o.deployment] {
			// Nodes of one name are taken for one node checked twice.
			if p.node == n.Name {
				continue
			}
			fix := "rename the role"
			if p.role != "" {
				fix = fmt.Sprintf("rename the role, or role %s of node %s", p.role, p.node)
			}
			report(role(o.role), roleMaking(o.role), "role %s of node %s makes %s, and %s of node %s makes %s too: deployed in one namespace, each node would replace the other's; %s", o.role, n.Name, o.objects(), p.owner(), p.node, p.objects(), fix)
		}
	}
}
