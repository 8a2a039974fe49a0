package scenarios

import (
	"cmp"
	"regexp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Permission is one access to the Kubernetes API in the node's
// namespace, as RBAC grants it: a verb on a resource (with its
// subresource) of an API group.
type Permission struct {
	// Group is the API group; "" is the core group.
	Group string
	// Resource is the resource, with its subresource: "pods/exec".
	Resource string
	Verb     string
}

// String says the permission as the runner's errors name it: "create
// on pods/exec".
func (p Permission) String() string { return p.Verb + " on " + p.Resource }

// The permissions the runner uses. A WebSocket exec or port-forward
// (an upgraded GET) is authorized as create, as kubectl's are since
// Kubernetes 1.35; the SPDY fallback is a POST, create too.
var (
	getDeployments  = Permission{Group: "apps", Resource: "deployments", Verb: "get"}
	listReplicaSets = Permission{Group: "apps", Resource: "replicasets", Verb: "list"}
	getServices     = Permission{Resource: "services", Verb: "get"}
	getPods         = Permission{Resource: "pods", Verb: "get"}
	listPods        = Permission{Resource: "pods", Verb: "list"}
	execInPods      = Permission{Resource: "pods/exec", Verb: "create"}
	forwardPods     = Permission{Resource: "pods/portforward", Verb: "create"}
	listServices    = Permission{Resource: "services", Verb: "list"}
	listEndpoints   = Permission{Group: "discovery.k8s.io", Resource: "endpointslices", Verb: "list"}
	addContainers   = Permission{Resource: "pods/ephemeralcontainers", Verb: "update"}
	attachToPods    = Permission{Resource: "pods/attach", Verb: "create"}
	listEvents      = Permission{Resource: "events", Verb: "list"}
)

// Capability is something the suites ask of a cluster, with the API
// access it takes there. A scenario declares the capabilities its steps
// use (Scenario.Uses); the runner's Role is derived from them (Access).
type Capability struct {
	Name   string
	Access []Permission
}

// The capabilities of a cluster. Each names the functions that use it:
// a new use of the API belongs to one of them, or to a new one.
var (
	// capDeployments reads the plan's Deployments and their pods by
	// each Deployment's selector (deploymentsAsPlanned, nodeImagePods,
	// readyPodsByRole, Discover).
	capDeployments = Capability{Name: "the planned Deployments and their pods", Access: []Permission{getDeployments, listPods}}
	// capRollouts reads the ReplicaSets of the Deployments, by each
	// one's selector (newestReplicaSet).
	capRollouts = Capability{Name: "the Deployments' ReplicaSets", Access: []Permission{listReplicaSets}}
	// capServices reads the plan's Services and the pods each one's
	// selector selects (servicesAsPlanned, targetPortsNotPlain, Discover).
	capServices = Capability{Name: "the planned Services and the pods behind them", Access: []Permission{getServices, listPods}}
	// capServiceSlices reads the EndpointSlices of the planned Services
	// (servicesAsPlanned): a slice that no controller of Kubernetes made
	// adds endpoints that the Service's selector does not say.
	capServiceSlices = Capability{Name: "the EndpointSlices of the planned Services", Access: []Permission{listEndpoints}}
	// capPodStatus reads a pod's status and spec (world.status, which the
	// runner's settle step uses too; namedPort).
	capPodStatus = Capability{Name: "a pod's status", Access: []Permission{getPods}}
	// capPodHistories reads the statuses of many pods with one list of
	// the namespace's pods (world.Histories, which servicesStayUp's
	// watch asks every look).
	capPodHistories = Capability{Name: "the pods' statuses", Access: []Permission{listPods}}
	// capKubeletStop reads the kubelet's events of a pod whose service's
	// exit says nothing of itself (world.KubeletStop, withKubeletStop):
	// a stop for a failed liveness probe is no restart.
	capKubeletStop = Capability{Name: "the kubelet's stops of a pod", Access: []Permission{listEvents}}
	// capExec runs a command in a pod's container: world.readSecret,
	// secretTimes, nodeFile (the node's files in the main pod),
	// restartSidecar, and systemctl in the units' judges.
	capExec = Capability{Name: "a command in a pod", Access: []Permission{execInPods}}
	// capIdentity looks for a pod's token in each of its containers
	// (world.identityNotReadable): the pod's containers, then exec.
	capIdentity = Capability{Name: "a pod's identity", Access: []Permission{getPods, execInPods}}
	// capForward forwards the pods' and Services' ports to loopback,
	// from outside the cluster only (Discover, kube.Forward again when
	// client-go ends one, and a pod that serves a role's database).
	capForward = Capability{Name: "port-forwards to the pods", Access: []Permission{forwardPods}}
	// capDatabase finds what serves the host of a role's database URL:
	// the namespace's pods, its Services, and their endpoints
	// (locateDatabase).
	capDatabase = Capability{Name: "where a role's database is", Access: []Permission{listPods, listServices, listEndpoints}}
	// capProbe adds a reader to the main pod and talks to it
	// (world.probe): the pod, its ephemeral containers, an attach. Not
	// with --from-runner.
	capProbe = Capability{Name: "a probe in the main pod", Access: []Permission{getPods, addContainers, attachToPods}}
)

// settleUses are the capabilities of the step the runner adds after a
// disruptive scenario (SettleStep).
var settleUses = []Capability{capPodStatus}

// DiscoveryUses are the capabilities the discovery of a node's world in
// a cluster uses: from outside the cluster it port-forwards every port,
// from inside (--in-cluster) it dials the pods' and Services' own
// addresses, and forwards nothing.
func DiscoveryUses(inCluster bool) []Capability {
	uses := []Capability{capDeployments, capServices}
	if !inCluster {
		uses = append(uses, capForward)
	}
	return uses
}

// AccessOptions say which scenarios a runner runs, and where.
type AccessOptions struct {
	// Run selects scenarios by "suite/scenario", as --run does.
	Run *regexp.Regexp
	// Disruptive lets the disruptive scenarios run, as --disruptive.
	Disruptive bool
	// InCluster: the runner runs in a pod of the cluster.
	InCluster bool
	// FromRunner: the runner adds no probe to the main pod.
	FromRunner bool
}

// Grant is a permission with what needs it: "discovery", or the
// scenarios by "suite/scenario".
type Grant struct {
	Permission
	By []string
}

// Access is the API access that a runner needs in the node's namespace
// to run the scenarios of suites that o selects: the discovery's, and
// that of each selected scenario that may run (a disruptive one only
// with o.Disruptive, with the runner's settle step). The permissions
// are in the order of Rules.
func Access(suites []*Suite, o AccessOptions) []Grant {
	by := map[Permission][]string{}
	add := func(who string, uses []Capability) {
		for _, c := range uses {
			if o.InCluster && c.Name == capForward.Name {
				// Inside the cluster the runner dials the pods.
				continue
			}
			if o.FromRunner && c.Name == capProbe.Name {
				continue
			}
			for _, p := range c.Access {
				if !slices.Contains(by[p], who) {
					by[p] = append(by[p], who)
				}
			}
		}
	}
	add("discovery", DiscoveryUses(o.InCluster))
	for _, su := range suites {
		for _, sc := range su.Scenarios {
			id := su.Name + "/" + sc.Name
			if (o.Run != nil && !o.Run.MatchString(id)) || (sc.Disruptive && !o.Disruptive) {
				continue
			}
			add(id, sc.Uses)
			if sc.Disruptive {
				add(id, settleUses)
			}
		}
	}
	out := make([]Grant, 0, len(by))
	for p, who := range by {
		out = append(out, Grant{Permission: p, By: who})
	}
	slices.SortFunc(out, func(a, b Grant) int { return comparePermissions(a.Permission, b.Permission) })
	return out
}

// comparePermissions orders permissions by group, resource and verb.
func comparePermissions(a, b Permission) int {
	return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
}

// Rules are the rules of a Role that grants exactly grants: one rule
// per group and resource, with its verbs.
func Rules(grants []Grant) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, g := range grants {
		if n := len(out); n > 0 && out[n-1].APIGroups[0] == g.Group && out[n-1].Resources[0] == g.Resource {
			out[n-1].Verbs = append(out[n-1].Verbs, g.Verb)
			continue
		}
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{g.Group}, Resources: []string{g.Resource}, Verbs: []string{g.Verb}})
	}
	return out
}

// usesNothing declares a scenario that asks nothing of a cluster's API
// (it dials the inventory's addresses, Postgres, OpenBao).
var usesNothing = []Capability{}
