package scenarios

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios/world"
)

// The deployments suite compares the cluster with what the node surface
// fixes of the node's plan ("The pods the k8s method makes"). It checks:
//   - the Deployments, with their replicas ready;
//   - their containers by the contract's names, the companion's program,
//     and the service's variables with their values;
//   - the sidecar: a restartable init container with a startup probe, the
//     only one with the pod's token;
//   - the main containers' exits: none but restarts for new secret
//     values while the suites judge them, no kill or stop by the kubelet;
//   - images as relations, never as the plan's placeholder references: a
//     role of the node's image runs the main pod's image, and a service's
//     container and its companion run one image that is not the node's;
//   - each role's Service: exactly its ports, leading to exactly the
//     role's ready pods.
//
// Spec: US1-1, US1-6, US1-7, US1-8, US1-10, US1-14.
var deploymentsSuite = &Suite{
	Name: "deployments",
	Doc:  "the cluster holds what the contract fixes of the node's plan: Deployments with their replicas ready and their services up (no exit but a restart for a new secret value), containers, variables, sidecar and identity as planned, images as relations; Services with exactly their ports, leading to exactly their role's ready pods",
	Scenarios: []*Scenario{
		{
			Name:  "deployments-as-planned",
			Spec:  []string{"US1-1", "US1-6", "US1-7", "US1-10", "US1-14"},
			Doc:   "each planned Deployment has its replicas ready, every ready pod of its newest ReplicaSet; the contract's containers, the companion's program, the service's variables and values, the sidecar as a restartable init container with a startup probe, the token in the sidecar only; a role of the node's image runs the main pod's image, a service and its companion one image that is not the node's",
			Skip:  needsCluster,
			Uses:  []Capability{capDeployments, capRollouts},
			Steps: Checks(Check{Name: "compare each Deployment with the contract", Do: deploymentsAsPlanned}),
		},
		{
			Name:  "services-as-planned",
			Spec:  []string{"US1-8", "SC-004"},
			Doc:   "the Service of each role has exactly the role's ports and metrics port, the plain LDAP port absent, its type and routing as planned, no EndpointSlice that the endpoint controller did not make, and behind each port exactly the role's ready pods, each reached on the role's planned port",
			Skip:  needsCluster,
			Uses:  []Capability{capServices, capDeployments, capServiceSlices},
			Steps: Checks(Check{Name: "compare each Service with the plan", Do: servicesAsPlanned}),
		},
		{
			Name:  "ports-from-main-pod",
			Spec:  []string{"US1-8", "FR-010a"},
			Doc:   "from the main pod (a probe there; from the runner with --from-runner), every TCP port of every role's Service answers by the Service's name, the metrics port GETs the node's metrics path with a 2xx, and the Service's scrape annotations are the node's metrics",
			Skip:  func(w world.World) string { return cmp.Or(needsCluster(w), needsMainPod(w)) },
			Uses:  []Capability{capServices, capProbe},
			Steps: Checks(Check{Name: "reach each port of each Service", Do: portsFromMainPod}),
		},
		{
			Name:  "service-variables-as-running",
			Spec:  []string{"FR-011", "US1-10"},
			Doc:   "in each pod of a role of a service's image, the processes that run the service (its container's first process and that one's children) have every variable the node gives the image, with its value: what the service really gets, not only what the Deployment's template says",
			Skip:  needsServiceVariables,
			Uses:  []Capability{capExec},
			Steps: Checks(Check{Name: "read the environment of each service's processes", Do: serviceVariablesAsRunning}),
		},
		{
			Name:  "services-without-systemd",
			Spec:  []string{"US1-6"},
			Doc:   "in each pod of a role of a service's image, no systemd (nor another init) runs in the service's container: its processes as /proc lists them, not only an image that is not the node's",
			Skip:  needsServiceRoles,
			Uses:  []Capability{capExec},
			Steps: Checks(Check{Name: "list the processes of each service's container", Do: servicesWithoutSystemd}),
		},
		{
			Name:  "companion-stays-running",
			Spec:  []string{"US1-14", "FR-012", "Known Deviations"},
			Doc:   "in each pod of a role with a companion, the companion runs and has ended only with its service (within the pod's grace period), by the kubelet's record of both containers: it sleeps after its apply, so an end of its own is a crash or a program that ends, which the kubelet's restarts hide",
			Skip:  needsCompanion,
			Uses:  []Capability{capPodStatus},
			Steps: Checks(Check{Name: "compare the ends of each companion with its service's", Do: companionStaysRunning}),
		},
		{
			Name:  "services-stay-up",
			Spec:  []string{"US1-1", "US1-13", "Known Deviations"},
			Doc:   "the main container of each pod of each role (the service's, the node's in a pod of the node's image) ended only to restart for a new secret value, as its exit says: a kill by the kernel's OOM killer or a stop by the kubelet (a failed probe) fails whenever it came, any other exit since the run began fails (but lldap's first, Known Deviations), and each container is watched for the patience: the kubelet restarts a service that crashes now and then, ready between, which counts of ready replicas pass",
			Skip:  needsCluster,
			Uses:  []Capability{capPodHistories, capKubeletStop},
			Steps: Checks(Check{Name: "judge each main container's exits, then watch them", Do: servicesStayUp}),
		},
		{
			Name:  "service-units-not-in-node-pods",
			Spec:  []string{"US1-6"},
			Doc:   "no pod of the node's image runs the unit of a modular service that a role runs from the service's image",
			Skip:  needsServiceUnits,
			Uses:  []Capability{capDeployments, capExec},
			Steps: Checks(Check{Name: "ask each pod's systemd for the units of the roles' services", Do: serviceUnitsNotInNodePods}),
		},
	},
}

// needsCluster is the Skip of a scenario that reads a cluster's
// objects.
func needsCluster(w world.World) string {
	if w.Cluster() == nil {
		return noCluster
	}
	return ""
}

// needsServiceVariables is the Skip of service-variables-as-running: a
// cluster, and a role of a service's image that the node gives variables.
func needsServiceVariables(w world.World) string {
	if why := needsServiceRoles(w); why != "" {
		return why
	}
	inv := w.Inventory()
	if inv.Facts != nil && len(serviceVariables(inv)) == 0 {
		return "node " + inv.Node + " gives no variables to the image of a service that a role runs: none to read"
	}
	return ""
}

// serviceVariables are the variables the node gives the image of each
// role of a service's image that the inventory has, by role.
func serviceVariables(inv *inventory.Inventory) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, name := range serviceRoles(inv) {
		service := *inv.Facts.PodRoles.Roles[name].Service
		if vars := inv.Facts.PodRoles.Services[service].Variables; len(vars) > 0 {
			out[name] = vars
		}
	}
	return out
}

// serviceVariablesAsRunning reads, in each pod of each role of a
// service's image, the environment of the processes that run the service,
// and compares each variable the node gives the image.
func serviceVariablesAsRunning(ctx context.Context, s *State) error {
	vars := serviceVariables(s.Inv)
	return eachServicePod(ctx, s, slices.Sorted(maps.Keys(vars)), "the processes of the service with the node's variables", func(ctx context.Context, c *world.Cluster, role string, pod inventory.Endpoint) error {
		envs, err := c.ProcessEnvironment(ctx, pod)
		var exit *kube.ExitError
		switch {
		case kube.CommandMissing(err):
			return inconclusive("pod %s: its container %s has no shell or cat to read its processes' environment", pod.Name, pod.Container)
		case errors.As(err, &exit):
			// A process of another user, or a /proc that hides it.
			return inconclusive("pod %s: the environment of a process of container %s cannot be read: %v", pod.Name, pod.Container, err)
		case err != nil:
			return err
		}
		if wrong := wrongVariables(envs, vars[role]); len(wrong) > 0 {
			return poll.Permanent(fmt.Errorf("pod %s of role %s: %s", pod.Name, role, strings.Join(wrong, "; ")))
		}
		s.Note("pod %s of role %s: processes %s have %s as the node gives them", pod.Name, role, pidList(envs), strings.Join(slices.Sorted(maps.Keys(vars[role])), ", "))
		return nil
	})
}

// eachServicePod judges each pod of each of roles (roles of a service's
// image) by judge, polled within the patience, in the service's
// container; a role with no Running pod fails, naming it.
func eachServicePod(ctx context.Context, s *State, roles []string, expect string, judge func(ctx context.Context, c *world.Cluster, role string, pod inventory.Endpoint) error) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	var errs []error
	for _, role := range roles {
		pods, err := podsOf(s.Inv, role)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pod := range pods {
			probe := poll.Probe{Endpoint: fmt.Sprintf("pod %s/%s (container %s)", c.Namespace, pod.Name, pod.Container), Expect: fmt.Sprintf("%s (role %s)", expect, role), Within: s.Patience}
			errs = append(errs, poll.Eventually(ctx, probe, func(ctx context.Context) error { return judge(ctx, c, role, pod) }))
		}
	}
	return joinErrors(errs)
}

// wrongVariables says, for each process, each variable the node gives
// that it lacks or has with another value.
func wrongVariables(envs map[int]map[string]string, want map[string]string) []string {
	var out []string
	for _, pid := range slices.Sorted(maps.Keys(envs)) {
		for _, name := range slices.Sorted(maps.Keys(want)) {
			got, ok := envs[pid][name]
			switch {
			case !ok:
				out = append(out, fmt.Sprintf("process %d has no %s, which the node gives the image (%q)", pid, name, want[name]))
			case got != want[name]:
				out = append(out, fmt.Sprintf("process %d has %s=%q, the node gives %q", pid, name, got, want[name]))
			}
		}
	}
	return out
}

// pidList is processes for a sentence: "1, 7".
func pidList(envs map[int]map[string]string) string {
	return portList(slices.Sorted(maps.Keys(envs)))
}

// needsServiceRoles is the Skip of a scenario that looks into the pods
// of the roles of a service's image.
func needsServiceRoles(w world.World) string {
	return needsRoles(w, serviceRoles, "that runs a service's image")
}

// needsRoles is the Skip of a scenario that reads a cluster's pods of
// the roles that roles picks: a cluster, and one such role at least.
func needsRoles(w world.World, roles func(*inventory.Inventory) []string, what string) string {
	if why := needsCluster(w); why != "" {
		return why
	}
	inv := w.Inventory()
	if inv.Facts != nil && len(roles(inv)) == 0 {
		return "node " + inv.Node + " has no role " + what
	}
	return ""
}

// serviceRoles are the roles of a service's image that the inventory
// has, in name order.
func serviceRoles(inv *inventory.Inventory) []string {
	var out []string
	if inv.Facts == nil {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(inv.Facts.PodRoles.Roles)) {
		if r := inv.Facts.PodRoles.Roles[name]; r.Service != nil && inv.Roles[name] != nil {
			out = append(out, name)
		}
	}
	return out
}

// servicesWithoutSystemd lists, in each pod of each role of a service's
// image, the processes of the service's container, and fails on an init:
// the spec runs the service there "with no systemd" (US1-6).
func servicesWithoutSystemd(ctx context.Context, s *State) error {
	return eachServicePod(ctx, s, serviceRoles(s.Inv), "the service with no systemd", func(ctx context.Context, c *world.Cluster, role string, pod inventory.Endpoint) error {
		procs, pid1, err := c.Processes(ctx, pod)
		switch {
		case kube.CommandMissing(err):
			return inconclusive("pod %s: its container %s has no shell or cat to list its processes", pod.Name, pod.Container)
		case err != nil:
			return err
		}
		if inits := initsOf(procs); len(inits) > 0 {
			return poll.Permanent(fmt.Errorf("pod %s of role %s: %s run in container %s, whose service runs with no systemd (PID 1: %s)", pod.Name, role, strings.Join(inits, ", "), pod.Container, strings.Join(pid1, " ")))
		}
		s.Note("pod %s of role %s: %d processes in container %s, no init; PID 1 is %s", pod.Name, role, len(procs), pod.Container, strings.Join(pid1, " "))
		return nil
	})
}

// initsOf names the processes that are an init: systemd, one of its
// programs (systemd-journald, …), or init.
func initsOf(procs []world.Process) []string {
	var out []string
	for _, p := range procs {
		if p.Comm == "systemd" || p.Comm == "init" || strings.HasPrefix(p.Comm, "systemd-") {
			out = append(out, fmt.Sprintf("process %d (%s)", p.PID, p.Comm))
		}
	}
	return out
}

// noCluster is why a scenario that reads a cluster's objects cannot run.
const noCluster = "the inventory has no cluster"

func deploymentsAsPlanned(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	client, p := c.Clientset, c.Plan
	// The node's image is the main pod's, whatever its reference.
	main := p.Deployments[0]
	var nodeImage string
	probe := poll.Probe{Endpoint: "Deployment " + main.Namespace + "/" + main.Name, Expect: "the main pod's Deployment, with its container " + plan.ContainerNode, Within: s.Patience}
	err = poll.Eventually(ctx, probe, func(ctx context.Context) error {
		got, err := client.AppsV1().Deployments(main.Namespace).Get(ctx, main.Name, metav1.GetOptions{})
		if err != nil {
			return world.ObjectError("Deployment", main.Namespace, main.Name, "get", err)
		}
		if nodeImage = imageOf(got.Spec.Template.Spec.Containers, plan.ContainerNode); nodeImage == "" {
			return poll.Saw("containers %s, and none named %s", containerNames(got.Spec.Template.Spec.Containers), plan.ContainerNode)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Note("the node's image is the main pod's: %s", nodeImage)
	var errs []error
	contents := imageContents{}
	for _, want := range p.Deployments {
		role, r := c.RoleOf(want)
		probe := poll.Probe{Endpoint: "Deployment " + want.Namespace + "/" + want.Name, Expect: fmt.Sprintf("role %s as the contract fixes it, %d replicas ready", role, *want.Spec.Replicas), Within: s.Patience}
		var seen imageContents
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := client.AppsV1().Deployments(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return world.ObjectError("Deployment", want.Namespace, want.Name, "get", err)
			}
			if err := compareDeployment(want, got, role, r, nodeImage); err != nil {
				return err
			}
			if err := rolledOut(ctx, client, got, role); err != nil {
				return err
			}
			pods, err := world.RunningPods(ctx, client, got)
			if err != nil {
				return err
			}
			if len(pods) == 0 {
				return poll.Saw("no Running pod of role %s", role)
			}
			newest, err := newestReplicaSet(ctx, client, got)
			if err != nil {
				return err
			}
			if err := onNewestReplicaSet(got, newest, pods, role); err != nil {
				return err
			}
			for _, pod := range pods {
				if err := asTemplate(got, &pod, role); err != nil {
					return err
				}
				if err := identityOnlyInSidecar(&pod, role, len(want.Spec.Template.Spec.InitContainers) > 0); err != nil {
					return err
				}
			}
			seen, err = contents.with(pods, role)
			return err
		})
		if err == nil {
			contents = seen
			s.Note("Deployment %s (role %s): %d ready replicas of %s", want.Name, role, *want.Spec.Replicas, containerNames(want.Spec.Template.Spec.Containers))
		}
		errs = append(errs, err)
	}
	return joinErrors(errs)
}

// rolledOut checks that what runs is the template, not only that the
// template is right: the controller saw the last change, and the
// Deployment has exactly its replicas, each on the current template,
// ready and available. A count of the current template alone passes a
// stuck rollout of one replica: the new pod counts as updated while it
// cannot start, and the old one is the ready one. A rollout that passed
// its deadline (Progressing false) fails too.
func rolledOut(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment, role string) error {
	return rolloutState(d, role, func() string { return podsNotReady(ctx, client, d) })
}

// rolloutState is rolledOut's judgement of the Deployment's status, with
// notReady saying why its pods are not ready, when the counts show some.
func rolloutState(d *appsv1.Deployment, role string, notReady func() string) error {
	if d.Status.ObservedGeneration < d.Generation {
		return poll.Saw("role %s: Deployment %s is at generation %d, its controller saw %d", role, d.Name, d.Generation, d.Status.ObservedGeneration)
	}
	want, st := *d.Spec.Replicas, d.Status
	if st.Replicas != want || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.AvailableReplicas != want || st.UnavailableReplicas != 0 {
		paused := ""
		if d.Spec.Paused {
			// The pods run an older template, and none of the current
			// one comes until someone resumes it.
			paused = " (the Deployment is paused, spec.paused: its controller rolls out no change)"
		}
		return poll.Saw("role %s: Deployment %s has %d pods for spec.replicas %d: %d on its current template, %d ready, %d available: its rollout is not done%s%s",
			role, d.Name, st.Replicas, want, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, paused, notReady())
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			return poll.Saw("role %s: Deployment %s is not progressing (%s: %s)", role, d.Name, c.Reason, c.Message)
		}
	}
	return nil
}

// podsNotReady says why the pods of a Deployment that are not ready are
// not: unscheduled, a container waiting (an image that cannot be pulled),
// or ended; "" when every pod is ready or the pods cannot be listed.
func podsNotReady(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) string {
	list, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return ""
	}
	return whyNotReady(list.Items)
}

// whyNotReady is podsNotReady's text for the pods of a Deployment.
func whyNotReady(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		if p.DeletionTimestamp != nil || world.PodReady(&p) {
			continue
		}
		why := string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				why += fmt.Sprintf(", not scheduled (%s: %s)", c.Reason, c.Message)
			}
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if state := kube.ContainerState(cs); state != "" {
				why += ", " + state
			}
		}
		out = append(out, fmt.Sprintf("pod %s (template %s): %s", p.Name, p.Labels[appsv1.DefaultDeploymentUniqueLabelKey], oneline.Of(why)))
	}
	if len(out) == 0 {
		return ""
	}
	return "; " + strings.Join(out, "; ")
}

// asTemplate checks that a running pod runs its Deployment's template: its
// containers and init containers (the sidecar) by name, and their images
// (a pod's images can be changed in place, and its template's hash stays).
func asTemplate(d *appsv1.Deployment, pod *corev1.Pod, role string) error {
	for _, kind := range []struct {
		what      string
		want, got []corev1.Container
	}{
		{"containers", d.Spec.Template.Spec.Containers, pod.Spec.Containers},
		{"init containers", d.Spec.Template.Spec.InitContainers, pod.Spec.InitContainers},
	} {
		if w, g := sortedNames(kind.want), sortedNames(kind.got); !slices.Equal(w, g) {
			return poll.Saw("role %s: pod %s has %s %s, its Deployment's template %s", role, pod.Name, kind.what, cmp.Or(strings.Join(g, ","), "none"), cmp.Or(strings.Join(w, ","), "none"))
		}
		for _, c := range kind.got {
			if image := imageOf(kind.want, c.Name); c.Image != image {
				return poll.Saw("role %s: pod %s runs image %s in container %s, its Deployment's template %s", role, pod.Name, c.Image, c.Name, image)
			}
		}
	}
	return nil
}

// imageContents is what the node's running pods run under each image
// reference: the content (the status's imageID) of the first container
// seen with it, by the kind of the ID. A reference by tag can move
// between two pulls (a push to the registry, then a pod started again on
// a node that pulls anew): the replicas of one template, or a role of the
// node's image and the main pod, then run two programs under one name,
// and every template and image name still agrees.
type imageContents map[string]runningImage

// runningImage is one container's content of an image reference.
type runningImage struct {
	pod, container, role string
	id                   string
}

// with checks the containers of a role's pods against the contents seen
// and against each other, and returns the contents with theirs added. Two
// IDs are compared only when they are of one kind, both a registry's
// digest or both the runtime's ID of the image: a node that imported an
// image and one that pulled it name one content in two ways.
func (seen imageContents) with(pods []corev1.Pod, role string) (imageContents, error) {
	out := maps.Clone(seen)
	for _, pod := range pods {
		images := map[string]string{}
		for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
			images[c.Name] = c.Image
		}
		for _, cs := range append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...) {
			// What runs: an init container that ended, or a container
			// waiting to run again, runs no program.
			ref := images[cs.Name]
			if ref == "" || cs.ImageID == "" || cs.State.Running == nil {
				continue
			}
			got := runningImage{pod: pod.Name, container: cs.Name, role: role, id: cs.ImageID}
			kind, digest := imageContent(got.id)
			key := ref + " " + kind
			first, ok := out[key]
			if !ok {
				out[key] = got
				continue
			}
			if _, fdigest := imageContent(first.id); fdigest != digest {
				return nil, poll.Saw("image %s runs as two contents: %s in pod %s (role %s, container %s), %s in pod %s (role %s, container %s): the reference moved between their pulls (pin the image by digest, or start the older pods again)",
					ref, first.id, first.pod, first.role, first.container, got.id, got.pod, got.role, got.container)
			}
		}
	}
	return out, nil
}

// imageContent is the comparable part of a container status's imageID:
// its digest, and its kind, a registry's (repository@sha256:…) or the
// runtime's own ID of the image (sha256:…).
func imageContent(id string) (kind, digest string) {
	for _, scheme := range []string{"docker-pullable://", "docker://"} {
		id = strings.TrimPrefix(id, scheme)
	}
	if i := strings.LastIndex(id, "@"); i >= 0 {
		return "registry digest", id[i+1:]
	}
	return "image ID", id
}

// revisionKey is the annotation by which the Deployment controller
// numbers a Deployment's templates and their ReplicaSets.
const revisionKey = "deployment.kubernetes.io/revision"

// newestReplicaSet is the ReplicaSet of a Deployment's current template:
// the one it controls with the Deployment's own revision. Until the
// controller made it, there is none, and a wait tries again.
func newestReplicaSet(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	list, err := client.AppsV1().ReplicaSets(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return nil, world.ObjectError("ReplicaSet", d.Namespace, d.Name+"-*", "list", err)
	}
	revision := d.Annotations[revisionKey]
	for i, rs := range list.Items {
		if metav1.IsControlledBy(&rs, d) && rs.DeletionTimestamp == nil && rs.Annotations[revisionKey] == revision {
			return &list.Items[i], nil
		}
	}
	return nil, poll.Saw("Deployment %s/%s at revision %q: no ReplicaSet of it has that revision yet", d.Namespace, d.Name, revision)
}

// onNewestReplicaSet checks that every ready pod of a Deployment belongs
// to its newest ReplicaSet. The counts of its status are the
// controller's word; a pod is judged by its own owner: a pod of an older
// template may stay ready beside new ones.
func onNewestReplicaSet(d *appsv1.Deployment, newest *appsv1.ReplicaSet, pods []corev1.Pod, role string) error {
	var old []string
	for _, p := range pods {
		if !world.PodReady(&p) || metav1.IsControlledBy(&p, newest) {
			continue
		}
		owner := "no ReplicaSet"
		if ref := metav1.GetControllerOf(&p); ref != nil {
			owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
		}
		old = append(old, fmt.Sprintf("pod %s (of %s)", p.Name, owner))
	}
	if len(old) > 0 {
		return poll.Saw("role %s: Deployment %s has ready pods that are not of its newest ReplicaSet %s (revision %s): %s", role, d.Name, newest.Name, newest.Annotations[revisionKey], strings.Join(old, ", "))
	}
	return nil
}

func containerNames(cs []corev1.Container) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return strings.Join(out, ",")
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func imageOf(cs []corev1.Container, name string) string {
	if c := container(cs, name); c != nil {
		return c.Image
	}
	return ""
}

// compareDeployment compares a Deployment with what the contract fixes of
// the planned one, for role r: replicas, containers by name, images by
// relation with the node's image, the companion's program, the service's
// variables, the sidecar, and the replicas ready. Each difference names
// the role.
func compareDeployment(want, got *appsv1.Deployment, role string, r facts.Role, nodeImage string) error {
	if got.Spec.Replicas == nil || *got.Spec.Replicas != *want.Spec.Replicas {
		return poll.Saw("role %s: spec.replicas %v, planned %d", role, ptrValue(got.Spec.Replicas), *want.Spec.Replicas)
	}
	wantCs, gotCs := want.Spec.Template.Spec.Containers, got.Spec.Template.Spec.Containers
	if w, g := sortedNames(wantCs), sortedNames(gotCs); !slices.Equal(w, g) {
		return poll.Saw("role %s: containers %s, the contract's %s", role, strings.Join(g, ","), strings.Join(w, ","))
	}
	if r.RunsNodeImage() {
		// The main pod's (role main) and each role's of the node's image.
		if image := imageOf(gotCs, plan.ContainerNode); image != nodeImage {
			return poll.Saw("role %s runs image %s in container %s, not the main pod's %s: a role of the node's image runs the node's image", role, image, plan.ContainerNode, nodeImage)
		}
	} else {
		service := *r.Service
		image := imageOf(gotCs, service)
		if image == nodeImage {
			return poll.Saw("role %s runs the node's image %s in container %s: a role with a service runs the service's image, with no systemd (US1-6)", role, image, service)
		}
		if companion := container(gotCs, plan.ContainerCompanion); companion != nil {
			if companion.Image != image {
				return poll.Saw("role %s runs image %s in container %s, not its service's %s (container %s) (FR-012)", role, companion.Image, plan.ContainerCompanion, image, service)
			}
			program := container(wantCs, plan.ContainerCompanion).Command[0]
			if len(companion.Command) == 0 || companion.Command[0] != program {
				return poll.Saw("role %s: container %s runs %q, not the program %s of the node's fediversity.podRoles.services.%s.companion (FR-012)", role, plan.ContainerCompanion, strings.Join(append(slices.Clone(companion.Command), companion.Args...), " "), program, service)
			}
		}
		if err := compareVariables(container(wantCs, service), container(gotCs, service), role, service); err != nil {
			return err
		}
	}
	if err := compareSidecar(want, got, role); err != nil {
		return err
	}
	if got.Status.ReadyReplicas != *want.Spec.Replicas {
		return poll.Saw("role %s: %d of %d replicas ready", role, got.Status.ReadyReplicas, *want.Spec.Replicas)
	}
	return nil
}

func sortedNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

// compareVariables checks that the service's container has each variable
// of services.<s>.environment with its value (FR-011); others the method
// may add.
func compareVariables(want, got *corev1.Container, role, service string) error {
	have := map[string]corev1.EnvVar{}
	for _, e := range got.Env {
		have[e.Name] = e
	}
	for _, w := range want.Env {
		g, ok := have[w.Name]
		switch {
		case !ok:
			return poll.Saw("role %s: container %s lacks the variable %s of the node's fediversity.podRoles.services.%s.environment (FR-011)", role, service, w.Name, service)
		case g.ValueFrom != nil:
			return poll.Saw("role %s: container %s takes %s from a source, not the value %q of the node's fediversity.podRoles.services.%s.environment (FR-011)", role, service, w.Name, w.Value, service)
		case g.Value != w.Value:
			return poll.Saw("role %s: container %s has %s=%q, the node's fediversity.podRoles.services.%s.environment says %q (FR-011)", role, service, w.Name, g.Value, service, w.Value)
		}
	}
	return nil
}

// compareSidecar checks the planned sidecar: the container secrets as an
// init container with restartPolicy Always, which Kubernetes starts first,
// and a startup probe, which holds the others until it passes (US1-7).
func compareSidecar(want, got *appsv1.Deployment, role string) error {
	if container(want.Spec.Template.Spec.InitContainers, plan.ContainerSidecar) == nil {
		return nil
	}
	spec := got.Spec.Template.Spec
	sidecar := container(spec.InitContainers, plan.ContainerSidecar)
	switch {
	case sidecar == nil && container(spec.Containers, plan.ContainerSidecar) != nil:
		return poll.Saw("role %s: %s is a container beside the service, not an init container: Kubernetes may start the service before its secrets (US1-7)", role, plan.ContainerSidecar)
	case sidecar == nil:
		return poll.Saw("role %s: no sidecar %s, though the role has secrets (init containers %s)", role, plan.ContainerSidecar, containerNames(spec.InitContainers))
	case sidecar.RestartPolicy == nil || *sidecar.RestartPolicy != corev1.ContainerRestartPolicyAlways:
		return poll.Saw("role %s: the init container %s has no restartPolicy Always: it is no sidecar, and the pod's service never starts while it runs", role, plan.ContainerSidecar)
	case sidecar.StartupProbe == nil:
		return poll.Saw("role %s: the sidecar %s has no startup probe: Kubernetes starts the service before its secrets are files (US1-7)", role, plan.ContainerSidecar)
	}
	return secretsShared(want, got, role, sidecar)
}

// secretsShared checks that each container the plan mounts the secrets
// in (the service, the companion) mounts, at plan.SecretsDir, the very
// volume the sidecar writes there, read-only as planned: a container
// that lacks it, or mounts another volume there, reads no secret or
// stale ones (FR-012).
func secretsShared(want, got *appsv1.Deployment, role string, sidecar *corev1.Container) error {
	written := mountAt(sidecar, plan.SecretsDir)
	if written == nil {
		return poll.Saw("role %s: the sidecar %s writes no volume at %s", role, plan.ContainerSidecar, plan.SecretsDir)
	}
	for _, w := range want.Spec.Template.Spec.Containers {
		planned := mountAt(&w, plan.SecretsDir)
		if planned == nil {
			continue
		}
		c := container(got.Spec.Template.Spec.Containers, w.Name)
		if c == nil {
			continue // compareDeployment names a missing container
		}
		switch m := mountAt(c, plan.SecretsDir); {
		case m == nil:
			return poll.Saw("role %s: container %s mounts nothing at %s, where the sidecar writes the role's secrets (FR-012)", role, w.Name, plan.SecretsDir)
		case m.Name != written.Name:
			return poll.Saw("role %s: container %s mounts volume %s at %s, not %s, which the sidecar writes", role, w.Name, m.Name, plan.SecretsDir, written.Name)
		case m.ReadOnly != planned.ReadOnly:
			return poll.Saw("role %s: container %s mounts %s with readOnly %v, planned %v", role, w.Name, plan.SecretsDir, m.ReadOnly, planned.ReadOnly)
		}
	}
	return nil
}

// mountAt is a container's mount at path, or nil.
func mountAt(c *corev1.Container, path string) *corev1.VolumeMount {
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].MountPath == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// identityOnlyInSidecar checks a pod as the API server admitted it: no
// container but secrets mounts a service-account token (US1-7), whether
// the pod's spec or the ServiceAccount admission put it there.
func identityOnlyInSidecar(pod *corev1.Pod, role string, hasSidecar bool) error {
	tokens := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ServiceAccountToken != nil {
				tokens[v.Name] = true
			}
		}
	}
	sidecarHasIt := false
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		for _, m := range c.VolumeMounts {
			if !tokens[m.Name] && m.MountPath != plan.IdentityDir {
				continue
			}
			if c.Name == plan.ContainerSidecar {
				sidecarHasIt = true
				continue
			}
			if hasSidecar || c.Name != plan.ContainerNode {
				return poll.Permanent(fmt.Errorf("role %s: pod %s mounts the pod's service-account token into container %s (volume %s at %s): only %s may hold the identity (US1-7)", role, pod.Name, c.Name, m.Name, m.MountPath, plan.ContainerSidecar))
			}
		}
	}
	if hasSidecar && !sidecarHasIt {
		return poll.Permanent(fmt.Errorf("role %s: pod %s gives its sidecar %s no service-account token to log in to OpenBao with", role, pod.Name, plan.ContainerSidecar))
	}
	return nil
}

func ptrValue(p *int32) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// servicesAsPlanned compares each planned Service with the cluster's: its
// ports, and the pods behind it (the ready pods its own selector selects)
// with the ready pods of its role's Deployment, each behind every port.
func servicesAsPlanned(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	client, p := c.Clientset, c.Plan
	var errs []error
	for _, want := range p.Services {
		role := want.Labels[names.LabelRole]
		probe := poll.Probe{Endpoint: "Service " + want.Namespace + "/" + want.Name, Expect: fmt.Sprintf("exactly the ports of role %s, and its ready pods behind it", role), Within: s.Patience}
		var behind []string
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := client.CoreV1().Services(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return world.ObjectError("Service", want.Namespace, want.Name, "get", err)
			}
			if w, g := servicePorts(want), servicePorts(got); !slices.Equal(w, g) {
				return poll.Saw("the Service %s has ports %s, planned exactly %s", want.Name, strings.Join(g, ","), strings.Join(w, ","))
			}
			if err := serviceRouting(want, got); err != nil {
				return err
			}
			b, err := world.BackendsOf(ctx, client, got)
			if err != nil {
				return err
			}
			endpointSlices, err := client.DiscoveryV1().EndpointSlices(got.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + got.Name})
			if err != nil {
				return world.ObjectError("EndpointSlice", got.Namespace, got.Name+"-*", "list", err)
			}
			if err := foreignSlices(got, endpointSlices.Items, b); err != nil {
				return err
			}
			pods, err := readyPodsByRole(ctx, c)
			if err != nil {
				return err
			}
			behind = b.Ready
			return compareBackends(got, b, role, pods)
		})
		if err == nil {
			s.Note("Service %s has exactly %s, and behind each port the ready pods of role %s: %s", want.Name, strings.Join(servicePorts(want), ","), role, strings.Join(behind, ", "))
		}
		errs = append(errs, err)
	}
	return joinErrors(errs)
}

// serviceRouting checks what decides where a Service sends traffic
// besides its selector and ports: its type (another exposes the role
// outside the cluster), and the two settings that let traffic reach pods
// that are not ready, or only the pods on the client's node.
func serviceRouting(want, got *corev1.Service) error {
	role := want.Labels[names.LabelRole]
	if w, g := cmp.Or(want.Spec.Type, corev1.ServiceTypeClusterIP), cmp.Or(got.Spec.Type, corev1.ServiceTypeClusterIP); w != g {
		return poll.Saw("the Service %s is of type %s, planned %s", got.Name, g, w)
	}
	if got.Spec.PublishNotReadyAddresses {
		return poll.Saw("the Service %s publishes the addresses of pods that are not ready (spec.publishNotReadyAddresses), so its clients reach pods of role %s while they start or restart", got.Name, role)
	}
	if p := got.Spec.InternalTrafficPolicy; p != nil && *p != corev1.ServiceInternalTrafficPolicyCluster {
		return poll.Saw("the Service %s has spec.internalTrafficPolicy %s: a client reaches only the pods on its own node, and none where no pod of role %s runs", got.Name, *p, role)
	}
	return nil
}

// endpointController is the value of the managed-by label of the
// EndpointSlices that Kubernetes makes from a Service's selector.
const endpointController = "endpointslice-controller.k8s.io"

// foreignSlices finds where kube-proxy sends a Service's traffic besides
// the ready pods its selector selects (b): EndpointSlices that Kubernetes
// did not make from the selector, and, in any slice (a managed-by label
// is only a label), a ready endpoint's address that is none of those
// pods'. The slices' addresses are checked, not used as the backends: a
// cluster that cannot write a pod's address into a slice (KWOK's
// loopback pods) has none, and the selector still says where traffic
// goes.
func foreignSlices(svc *corev1.Service, endpointSlices []discoveryv1.EndpointSlice, b world.ServiceBackends) error {
	var foreign, stray []string
	for _, es := range endpointSlices {
		var addrs []string
		for _, e := range es.Endpoints {
			addrs = append(addrs, e.Addresses...)
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue // kube-proxy sends it no traffic
			}
			for _, a := range e.Addresses {
				if _, ok := b.IPs[a]; !ok {
					stray = append(stray, fmt.Sprintf("%s (EndpointSlice %s)", a, es.Name))
				}
			}
		}
		if by := es.Labels[discoveryv1.LabelManagedBy]; by != endpointController {
			foreign = append(foreign, fmt.Sprintf("%s (managed by %q, addresses %s)", es.Name, by, cmp.Or(strings.Join(addrs, ","), "none")))
		}
	}
	if len(foreign) > 0 {
		slices.Sort(foreign)
		return poll.Saw("the Service %s has EndpointSlices that Kubernetes did not make from its selector: %s; its traffic goes to their addresses too", svc.Name, strings.Join(foreign, "; "))
	}
	if len(stray) > 0 {
		slices.Sort(stray)
		return poll.Saw("the Service %s sends traffic to %s, which is no ready pod that its selector selects (%s)", svc.Name, strings.Join(stray, ", "), world.SelectorOf(svc))
	}
	return nil
}

// readyPodsByRole are the ready pods of each planned Deployment, by its
// own selector, in name order, by role.
func readyPodsByRole(ctx context.Context, c *world.Cluster) (map[string][]string, error) {
	out := map[string][]string{}
	for _, want := range c.Plan.Deployments {
		d, err := c.Clientset.AppsV1().Deployments(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return nil, world.ObjectError("Deployment", want.Namespace, want.Name, "get", err)
		}
		pods, err := world.RunningPods(ctx, c.Clientset, d)
		if err != nil {
			return nil, err
		}
		role, _ := c.RoleOf(want)
		out[role] = []string{}
		for i := range pods {
			if world.PodReady(&pods[i]) {
				out[role] = append(out[role], pods[i].Name)
			}
		}
	}
	return out, nil
}

// compareBackends checks that the pods behind a Service are exactly the
// ready pods of its role, each behind every port of the Service; a pod
// that is not the role's is named with the role it is of.
func compareBackends(svc *corev1.Service, b world.ServiceBackends, role string, readyByRole map[string][]string) error {
	own := readyByRole[role]
	extra, missing := without(b.Ready, own), without(own, b.Ready)
	if len(extra) > 0 || len(missing) > 0 {
		var diff []string
		if len(extra) > 0 {
			for i, p := range extra {
				extra[i] = p + " (" + whosePod(p, readyByRole) + ")"
			}
			diff = append(diff, "extra "+strings.Join(extra, ", "))
		}
		if len(missing) > 0 {
			diff = append(diff, "missing "+strings.Join(missing, ", "))
		}
		return poll.Saw("the Service %s leads to %s, not to exactly the ready pods of role %s (%s): %s; %s", svc.Name, podList(b.Ready), role, podList(own), strings.Join(diff, "; "), world.SelectorOf(svc))
	}
	if len(own) == 0 {
		return poll.Saw("the Service %s has no ready pod behind it, and role %s has none ready", svc.Name, role)
	}
	for _, sp := range svc.Spec.Ports {
		var serving []string
		for _, at := range b.Ports[sp.Name] {
			serving = append(serving, at.Pod)
		}
		if lacking := without(own, serving); len(lacking) > 0 {
			return poll.Saw("the Service %s: its port %d/%s (target port %s) reaches no port of pods %s of role %s", svc.Name, sp.Port, sp.Protocol, sp.TargetPort.String(), strings.Join(lacking, ", "), role)
		}
		// The plan gives each Service port the number of the container
		// port it targets: another number is another server of the pod.
		for _, at := range b.Ports[sp.Name] {
			if at.Port != sp.Port {
				return poll.Saw("the Service %s: its port %d/%s (target port %s) reaches port %d of pod %s, where role %s serves it on port %d as planned", svc.Name, sp.Port, sp.Protocol, sp.TargetPort.String(), at.Port, at.Pod, role, sp.Port)
			}
		}
	}
	return nil
}

// whosePod says which role a pod behind a Service is of.
func whosePod(pod string, readyByRole map[string][]string) string {
	for role, pods := range readyByRole {
		if slices.Contains(pods, pod) {
			return "role " + role
		}
	}
	return "of no role of the node"
}

func podList(pods []string) string {
	if len(pods) == 0 {
		return "no pod"
	}
	return "pods " + strings.Join(pods, ", ")
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
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	_, err = judgeMatrix(ctx, s, c, serviceUnits(c.Node), "no unit of a role's service in any of them")
	return err
}
