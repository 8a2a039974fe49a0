package checks

import (
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/plan"
)

// collideNode is a node on k8s-pod.nix with roles: each a requested role of
// the node's image, "r:" one with a port, "r?" one without a request, and
// "lldap" one of lldap's image with a metrics port.
func collideNode(name string, roles ...string) *facts.Node {
	one, lldap := 1, "lldap"
	n := &facts.Node{
		Name: name, Units: map[string]facts.Unit{"u": {Enable: true}}, ModularServices: []string{"lldap"},
		PodRoles: facts.PodRoles{Roles: map[string]facts.Role{}, Services: map[string]facts.Service{}},
		K8sPod:   facts.K8sPod{Enable: true},
	}
	for _, r := range roles {
		role := facts.Role{Replicas: &one, Units: []string{"u"}}
		switch {
		case strings.HasSuffix(r, "?"):
			r, role = strings.TrimSuffix(r, "?"), facts.Role{}
		case strings.HasSuffix(r, ":"):
			r, role.Ports = strings.TrimSuffix(r, ":"), []facts.Port{{Port: 80, Protocol: facts.ProtocolTCP}}
		case r == "lldap":
			role = facts.Role{Replicas: &one, Service: &lldap, Metrics: &facts.Metrics{Port: 9100, Path: "/metrics"}}
		}
		n.PodRoles.Roles[r] = role
	}
	return n
}

// TestPlannedObjectsAreThePlans: the objects the rules compare are those
// plan.Make makes, by name and selector, so that a change of the plan's
// names reaches the rules.
func TestPlannedObjectsAreThePlans(t *testing.T) {
	n := collideNode("app", "main:", "worker", "lldap", "cron?")
	p, err := plan.Make(n, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, d := range p.Deployments {
		want = append(want, "Deployment "+d.Name+" "+selector(d.Spec.Selector.MatchLabels))
	}
	for _, s := range p.Services {
		want = append(want, "Service "+s.Name+" "+selector(s.Spec.Selector))
	}
	for _, o := range plannedObjects(n, n.Name, n.RoleNames()) {
		got = append(got, "Deployment "+o.deployment+" "+selector(o.labels))
		if o.service != "" {
			got = append(got, "Service "+o.service+" "+selector(o.labels))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the rules compare\n %q\nbut the plan makes\n %q", got, want)
	}
}

// findings returns "NODE SUBJECT" for each finding of rule, sorted.
func findings(results []*Result, rule string) []string {
	var out []string
	for _, res := range results {
		for _, f := range res.Findings {
			if f.Rule == rule {
				out = append(out, res.Node+" "+f.Subject.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestPR614ComparesTheNodesCheckedTogether(t *testing.T) {
	app := collideNode("app", "worker:", "queue-fast:", "cron?")
	worker := collideNode("app-worker")
	queue := collideNode("app-queue", "fast")
	cron := collideNode("app-cron")
	if got := findings(Check([]*facts.Node{app, worker, queue, cron}), "PR614"); !slices.Equal(got, []string{"app queue-fast", "app worker", "app-queue fast"}) {
		t.Errorf("checked together: %q", got)
	}
	for _, n := range []*facts.Node{app, worker, queue} {
		if got := findings([]*Result{CheckNode(n, Rules())}, "PR614"); len(got) > 0 {
			t.Errorf("node %s checked alone: %q", n.Name, got)
		}
	}
	// A name podroles made up, a node off k8s-pod.nix, and one node given
	// twice are not compared.
	madeUp := collideNode("app-worker")
	madeUp.NamedAfterFile = true
	off := collideNode("app-worker")
	off.K8sPod.Enable = false
	for _, other := range []*facts.Node{madeUp, off, collideNode("app", "worker")} {
		if got := findings(Check([]*facts.Node{app, other}), "PR614"); len(got) > 0 {
			t.Errorf("with %+v: %q", other, got)
		}
	}
}

func TestPR613NamesTheMainPodsLabels(t *testing.T) {
	res := CheckNode(collideNode("app", "main:"), Rules())
	var msgs []string
	for _, f := range res.Findings {
		msgs = append(msgs, f.Rule+": "+f.Message)
	}
	want := "PR613: role main makes the Deployment app-main and the Service app-main, but its pods have the labels of the main pod (podroles.fediversity.eu/node=app, podroles.fediversity.eu/role=main), which the Deployment app selects"
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], want) {
		t.Errorf("findings %q, want one that starts %q", msgs, want)
	}
}
