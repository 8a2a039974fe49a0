package scenarios_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/localenv"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/openbao"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

// realWorld is what the cluster's breaking cases break: the directory
// example's real pods on the machine's real node (the package's
// realCluster), and the mastodon example's, deployed beside them once a
// case needs them.
type realWorld struct {
	env    *localenv.Env
	client kubernetes.Interface
	kube   *kube.Client
}

// Worlds of the cluster's cases: the directory example's namespace, or
// the mastodon example's.
const (
	directoryWorld = ""
	mastodonWorld  = "mastodon"
)

// mastodonOnRealNode is the mastodon example deployed to the real
// cluster, in namespace mastodon, once for the package.
var mastodonOnRealNode struct {
	once sync.Once
	node *facts.Node
	err  error
}

// mastodon deploys the mastodon example beside the directory example,
// the first time, and returns its node.
func (w *realWorld) mastodon(t *testing.T, ctx context.Context) *facts.Node {
	t.Helper()
	m := &mastodonOnRealNode
	m.once.Do(func() {
		m.node = exampleNode(t, ctx, "mastodon.nix")
		m.err = w.env.RealPods().Deploy(ctx, m.node, mastodonWorld)
	})
	if m.err != nil {
		t.Fatal(m.err)
	}
	return m.node
}

// open finds the world of namespace ns in the real cluster, as scenarios
// run --kubeconfig does.
func (w *realWorld) open(t *testing.T, ctx context.Context, ns string) world.World {
	t.Helper()
	if ns == directoryWorld {
		return discoverReal(t, ctx, w.env, w.env.RealPods().Kubeconfig())
	}
	node := w.mastodon(t, ctx)
	// What the cluster cannot tell: its node image's units stand in.
	base := &inventory.Inventory{Roles: localenv.NodeImageStandIns(node)}
	found, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: w.env.RealPods().Kubeconfig(), Namespace: ns, Node: node, Dir: t.TempDir(), Base: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(found.Close)
	return found
}

// testBreakingCasesOnRealPods runs each case of the real pods, one after
// the other (the machine has one node): it breaks them, runs the
// scenario's suite (or the case's run), judges the results, mends what it
// broke, and sees the scenario pass again, at the command's defaults, so
// that the next case starts from a sound world (one whose pods may have
// restarted, as a user's do).
func testBreakingCasesOnRealPods(t *testing.T) {
	env := realCluster(t)
	client, kc := clusterClient(t, env)
	w := &realWorld{env: env, client: client, kube: kc}
	for _, id := range slices.Sorted(maps.Keys(breakingCases)) {
		for _, c := range breakingCases[id] {
			if c.where != onCluster {
				continue
			}
			t.Run(id+"/"+c.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
				defer cancel()
				if c.world == mastodonWorld {
					w.mastodon(t, ctx)
				}
				given := runnerInputs(t, env.RealPods().Inventory)
				mend := c.breakCluster(t, ctx, w)
				requireDeploymentBroken(t, env.RealPods().Inventory, given)
				// At the command's default patience, as a user's run.
				results := runSelected(t, ctx, w.open(t, ctx, c.world), scenarios.DefaultPatience, selection(id, c.run), suiteOf(id))
				judgeBreak(t, id, w.podNamesIn(t, ctx, c), results)
				mend()
				// The cluster recovers as a user's does: restarted pods
				// stay, with the back-off they grew, and the suite must
				// pass on them.
				settled(t, ctx, client, w.env.Namespace)
				if c.world == mastodonWorld {
					settled(t, ctx, client, mastodonWorld)
				}
				again := runSelected(t, ctx, w.open(t, ctx, c.world), scenarios.DefaultPatience, selection(id, id), suiteOf(id))[id]
				if again.Status != scenarios.Passed {
					t.Fatalf("mended, %s still %s: %s", id, again.Status, again.Reason)
				}
				for _, st := range again.Steps {
					t.Logf("mended: %s", strings.Join(st.Notes, "\n"))
				}
			})
		}
	}
}

// podPlaceholder is a pod in a cluster case's reasons: {DEPLOYMENT#i},
// the i-th Running pod of the Deployment by name, as the run saw it. A
// pod's name is generated; a prefix of it would match any pod.
var podPlaceholder = regexp.MustCompile(`\{([a-z0-9-]+)#([0-9]+)\}`)

// podNamesIn returns the case with the pods of its reasons named.
func (w *realWorld) podNamesIn(t *testing.T, ctx context.Context, c breakingCase) breakingCase {
	t.Helper()
	ns := w.env.Namespace
	if c.world != "" && c.world != directoryWorld {
		ns = c.world
	}
	c.reasons = slices.Clone(c.reasons)
	for i, r := range c.reasons {
		c.reasons[i] = podPlaceholder.ReplaceAllStringFunc(r, func(m string) string {
			sub := podPlaceholder.FindStringSubmatch(m)
			n, _ := strconv.Atoi(sub[2])
			pods := podsOf(t, ctx, w.client, ns, sub[1])
			if n >= len(pods) {
				t.Fatalf("reason %q: Deployment %s has %d Running pods", r, sub[1], len(pods))
			}
			return pods[n].Name
		})
	}
	return c
}

// changeDeployment is a break that changes a Deployment of the directory
// example and waits until it is rolled out; what it returns puts the
// Deployment back as it was.
func changeDeployment(name string, change func(*appsv1.Deployment)) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		var before *appsv1.Deployment
		update(t, ctx, w.client, w.env.Namespace, name, func(d *appsv1.Deployment) {
			before = d.DeepCopy()
			change(d)
		})
		return func() {
			update(t, ctx, w.client, w.env.Namespace, name, func(d *appsv1.Deployment) {
				d.Spec.Replicas = before.Spec.Replicas
				d.Spec.Template.Spec = before.Spec.Template.Spec
			})
		}
	}
}

// pausedRestart pauses a Deployment of the directory example and then
// restarts it as `kubectl rollout pause` and `kubectl rollout restart` do
// (a new annotation on its template): the controller sees the change and
// rolls out nothing, and the old pods stay ready. Mending resumes it.
func pausedRestart(name string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		ns := w.env.Namespace
		updateDeployment(t, ctx, w.client, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = true })
		updateDeployment(t, ctx, w.client, ns, name, func(d *appsv1.Deployment) {
			if d.Spec.Template.Annotations == nil {
				d.Spec.Template.Annotations = map[string]string{}
			}
			d.Spec.Template.Annotations["kubectl.kubernetes.io/restartedAt"] = time.Now().Format(time.RFC3339)
		})
		waitDeployment(t, ctx, w.client, ns, name, "its controller to see the change", time.Minute, func(d *appsv1.Deployment) error {
			if d.Status.ObservedGeneration < d.Generation {
				return poll.Saw("generation %d, seen %d", d.Generation, d.Status.ObservedGeneration)
			}
			return nil
		})
		return func() { update(t, ctx, w.client, ns, name, func(d *appsv1.Deployment) { d.Spec.Paused = false }) }
	}
}

// serviceBeforeSecrets lets Kubernetes start the service before its
// secrets are files: the sidecar loses its startup probe, and its agent
// starts 3 s late, so that the start and the files are seconds apart (the
// kubelet records a start to the second). Restarts stay as they are.
func serviceBeforeSecrets(d *appsv1.Deployment) {
	sidecar := &d.Spec.Template.Spec.InitContainers[0]
	sidecar.StartupProbe = nil
	sidecar.Command = append([]string{"sh", "-c", `sleep 3; exec "$0" "$@"`}, sidecar.Command...)
}

// withoutRestart drops the pod supervisor's --restart-on from the
// service's container: nothing restarts it for a secret.
func withoutRestart(d *appsv1.Deployment) {
	c := &d.Spec.Template.Spec.Containers[0]
	var cmd []string
	for i := 0; i < len(c.Command); i++ {
		if c.Command[i] == "--restart-on" {
			i++
			continue
		}
		cmd = append(cmd, c.Command[i])
	}
	c.Command = cmd
}

// livenessOn gives the service's container of a Deployment whose
// supervisor restarts nothing a liveness probe that fails once file
// changes: the probe keeps the value it first read in the container's
// own /tmp, which a new container starts without. The kubelet then stops
// the service (SIGTERM), which ends quietly, and starts it again: an exit
// after the new value that says nothing, as a restart for it would.
func livenessOn(file string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		withoutRestart(d)
		at := path.Join(plan.SecretsDir, file)
		check := fmt.Sprintf(`test -e /tmp/first || cp %[1]s /tmp/first; [ "$(cat %[1]s)" = "$(cat /tmp/first)" ]`, at)
		// A probe that timed out fails too: a loaded node's slow exec
		// must not stop the service before the new value.
		d.Spec.Template.Spec.Containers[0].LivenessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", check}}},
			PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 60,
		}
	}
}

// stoppedOnceByLiveness gives the service's container of a Deployment a
// liveness probe that fails once in the pod's life, its second time, and
// waits until the kubelet has stopped the service for it and started it
// again: the pod is ready, and stays ready, before the run begins. The
// probe keeps what it saw in a volume of the pod, which outlives the
// container. Mending rolls the Deployment back to new pods.
func stoppedOnceByLiveness(deployment string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		mend := changeDeployment(deployment, func(d *appsv1.Deployment) {
			spec := &d.Spec.Template.Spec
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "liveness-seen", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			c := &spec.Containers[0]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "liveness-seen", MountPath: "/liveness-seen"})
			once := `cd /liveness-seen && { test -e stopped || { test -e seen && touch stopped && exit 1; }; touch seen; }`
			// A probe that timed out fails too: a loaded node's slow exec
			// must not stop the service twice.
			c.LivenessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", once}}},
				PeriodSeconds: 2, FailureThreshold: 1, TimeoutSeconds: 60,
			}
		})(t, ctx, w)
		ns := w.env.Namespace
		probe := poll.Probe{Endpoint: "Deployment " + ns + "/" + deployment, Expect: "its service stopped once by the kubelet, then ready again", Within: 2 * time.Minute}
		if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			for _, p := range podsOf(t, ctx, w.client, ns, deployment) {
				for _, cs := range p.Status.ContainerStatuses {
					if cs.Name == p.Spec.Containers[0].Name && (cs.RestartCount == 0 || !cs.Ready) {
						return poll.Saw("pod %s: container %s restarted %d times, ready %v", p.Name, cs.Name, cs.RestartCount, cs.Ready)
					}
				}
			}
			return nil
		}); err != nil {
			mend()
			t.Fatal(err)
		}
		return mend
	}
}

// restartOn adds a secret to those the pod supervisor restarts the
// service for: a secret without restart then restarts it.
func restartOn(file string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		at := slices.Index(c.Command, "--")
		c.Command = slices.Insert(c.Command, at, "--restart-on", "/run/secrets/"+file)
	}
}

// restartOnAgentToken has a Deployment's OpenBao agent keep its token in
// a file beside the secrets, and the pod supervisor restart the service
// when that file changes: an operator's slip that a restarted agent, which
// logs in anew, turns into a restart of the service that no secret asked
// for. Mending puts both back, each in new pods.
func restartOnAgentToken(deployment string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	const token = "agent-token"
	sink := fmt.Sprintf(`"auto_auth": {
    "sink": [{"type": "file", "config": {"path": %q, "mode": 420}}],`, path.Join(plan.SecretsDir, token))
	keepToken := replaceInConfig(deployment, false, deployment+"-agent", "agent.json", `"auto_auth": {`, sink)
	watchToken := changeDeployment(deployment, restartOn(token))
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		mendConfig := keepToken(t, ctx, w)
		mendDeployment := watchToken(t, ctx, w)
		return func() {
			mendDeployment()
			mendConfig()
		}
	}
}

// replacePods deletes pods of a Deployment and waits until it is
// available again, with new pods that did not see the break.
func (w *realWorld) replacePods(t *testing.T, ctx context.Context, ns, deployment string, pods ...corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := w.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The Deployment's status may still count the deleted pods ready:
	// they are gone first.
	for _, p := range pods {
		probe := poll.Probe{Endpoint: "pod " + ns + "/" + p.Name, Expect: "gone", Within: 3 * time.Minute}
		if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			_, err := w.client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case err != nil:
				return err
			}
			return poll.Saw("still there")
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitAvailable(t, ctx, w.client, ns, deployment)
}

// inServiceContainer runs a shell script in the first pod of a
// Deployment of the directory example, in its container; mending
// replaces the pod.
func inServiceContainer(deployment, container, script string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		ns := w.env.Namespace
		pod := podsOf(t, ctx, w.client, ns, deployment)[0]
		mend := func() { w.replacePods(t, ctx, ns, deployment, pod) }
		if _, err := w.kube.Exec(ctx, ns, pod.Name, container, []string{"sh", "-c", script}); err != nil {
			mend()
			t.Fatal(err)
		}
		return mend
	}
}

// variableInCommand runs the service's command under a shell that sets a
// variable of the image to another value: the template's env is as
// planned, what the service gets is not.
func variableInCommand(name, value string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		c := &d.Spec.Template.Spec.Containers[0]
		c.Command = append([]string{"sh", "-c", name + "=" + value + ` exec "$0" "$@"`}, c.Command...)
	}
}

// onCompanion changes the companion container of a Deployment.
func onCompanion(change func(*appsv1.Deployment, *corev1.Container)) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		for i := range d.Spec.Template.Spec.Containers {
			if c := &d.Spec.Template.Spec.Containers[i]; c.Name == plan.ContainerCompanion {
				change(d, c)
			}
		}
	}
}

// setVariable sets a variable of a container, as the method might.
func setVariable(container, name, value string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) {
		for i, c := range d.Spec.Template.Spec.Containers {
			if c.Name != container {
				continue
			}
			for j, e := range c.Env {
				if e.Name == name {
					d.Spec.Template.Spec.Containers[i].Env[j].Value = value
				}
			}
		}
	}
}

// plainPortOnService puts the pods' plain LDAP port on lldap's Service.
var plainPortOnService = servicePortTo("directory-lldap", localenv.PortLDAP, localenv.PortLDAP)

// servicePortTo adds a port to lldap's Service that sends to the pods'
// port target; mending removes it.
func servicePortTo(service string, port, target int32) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return changeService(service, func(_ *testing.T, svc *corev1.Service) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "ldap", Port: port, TargetPort: intstr.FromInt32(target), Protocol: corev1.ProtocolTCP})
	})
}

// serviceTargetTo sends a Service's port to another port of the same
// pods, by number, as an operator's patch of spec.ports[].targetPort does.
func serviceTargetTo(service string, port, target int32) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return changeService(service, func(t *testing.T, svc *corev1.Service) {
		i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == port })
		if i < 0 {
			t.Fatalf("the Service %s has no port %d", service, port)
		}
		svc.Spec.Ports[i].TargetPort = intstr.FromInt32(target)
	})
}

// changeService is a break that changes a Service of the directory
// example; mending puts its spec back as it was.
func changeService(service string, change func(*testing.T, *corev1.Service)) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		services := w.client.CoreV1().Services(w.env.Namespace)
		set := func(change func(*corev1.Service)) {
			svc, err := services.Get(ctx, service, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			change(svc)
			if _, err := services.Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		var before corev1.ServiceSpec
		set(func(svc *corev1.Service) {
			before = *svc.Spec.DeepCopy()
			change(t, svc)
		})
		return func() { set(func(svc *corev1.Service) { svc.Spec = before }) }
	}
}

// foreignSlice adds to a Service of the directory example an
// EndpointSlice that no controller of Kubernetes made (as an operator's
// or another controller's), whose one endpoint is a pod of another
// Deployment, on a port of the Service; mending deletes it.
func foreignSlice(service, portName, other string, port int32) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		pods := podsOf(t, ctx, w.client, w.env.Namespace, other)
		if len(pods) == 0 {
			t.Fatalf("Deployment %s has no Running pod", other)
		}
		ready, tcp := true, corev1.ProtocolTCP
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: service + "-extra", Labels: map[string]string{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "operator"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{pods[0].Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &tcp}},
		}
		endpointSlices := w.client.DiscoveryV1().EndpointSlices(w.env.Namespace)
		if _, err := endpointSlices.Create(ctx, slice, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := endpointSlices.Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stuckRollout gives a Deployment of the directory example a template
// whose pods no node takes (a node selector no node has): the new pod
// stays Pending, and the old ones stay ready. The template is otherwise as
// planned, so only the rollout shows the break. Mending drops the
// selector and waits.
func stuckRollout(name string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return newTemplateThatCannotStart(name, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"podroles.test/no-such-node": "true"}
	})
}

// imageNotPulled gives a Deployment of the directory example a template
// whose service's image (and its companion's) cannot be pulled: a
// registry on a loopback port where nothing listens.
func imageNotPulled(name, service string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return newTemplateThatCannotStart(name, func(d *appsv1.Deployment) {
		cs := d.Spec.Template.Spec.Containers
		image := imageOf(cs, service)
		for i := range cs {
			if cs[i].Image == image {
				cs[i].Image = "127.0.0.1:1/podroles/no-such-image:1"
			}
		}
	})
}

// movedTag moves the image of a Deployment's container to other content
// under its name, as a push of the same tag does for a node that pulls
// it anew: the node's containerd imports the image with one file more
// under the same reference (`ctr images import`). The Deployment's first
// pod is started again on it, and the other replicas keep the old
// content; every template and image name still agrees. Mending puts the
// old content back under the name and starts the moved pods again.
func movedTag(deployment, container string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		ns := w.env.Namespace
		before := podsOf(t, ctx, w.client, ns, deployment)
		ref := imageOf(before[0].Spec.Containers, container)
		engine := localenv.ContainerEngine()
		base := filepath.Join(t.TempDir(), "image.oci.tar")
		if err := kubenode.SaveLocal(ctx, engine, ref, base); err != nil {
			t.Fatal(err)
		}
		node := w.env.RealPods().Node().Containerd()
		moved := kubenode.Image{Ref: ref, Base: base, Files: []kubenode.File{{Name: "moved-tag", Mode: 0o644, Data: []byte("the same tag, pushed again\n")}}}
		if err := node.Import(ctx, moved); err != nil {
			t.Fatal(err)
		}
		w.replacePods(t, ctx, ns, deployment, before[0])
		return func() {
			if err := node.ImportLocal(ctx, engine, ref); err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, p := range before {
				kept[p.Name] = true
			}
			w.replacePods(t, ctx, ns, deployment, slices.DeleteFunc(podsOf(t, ctx, w.client, ns, deployment), func(p corev1.Pod) bool { return kept[p.Name] })...)
		}
	}
}

// newTemplateThatCannotStart changes a Deployment of the directory
// example and waits until its controller made the new ReplicaSet, not for
// the rollout, which never ends; mending puts the template back and waits
// until the Deployment is available.
func newTemplateThatCannotStart(name string, change func(*appsv1.Deployment)) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		deployments := w.client.AppsV1().Deployments(w.env.Namespace)
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before := d.Spec.Template.Spec.DeepCopy()
		setTemplate := func(change func(*appsv1.Deployment)) {
			updateDeployment(t, ctx, w.client, w.env.Namespace, name, change)
		}
		setTemplate(change)
		waitDeployment(t, ctx, w.client, w.env.Namespace, name, "a rollout under way", time.Minute, func(d *appsv1.Deployment) error {
			if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas == 0 {
				return poll.Saw("generation %d, observed %d, %d updated", d.Generation, d.Status.ObservedGeneration, d.Status.UpdatedReplicas)
			}
			return nil
		})
		return func() {
			setTemplate(func(d *appsv1.Deployment) { d.Spec.Template.Spec = *before })
			waitAvailable(t, ctx, w.client, w.env.Namespace, name)
		}
	}
}

// imageOf is the image of a container by name.
func imageOf(cs []corev1.Container, name string) string {
	for _, c := range cs {
		if c.Name == name {
			return c.Image
		}
	}
	return ""
}

// serviceSelectsOtherRole gives a Service of the directory example the
// selector of another role's Service, as a method that mixed up its roles
// would; mending puts its own selector back.
func serviceSelectsOtherRole(service, other string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		theirs, err := w.client.CoreV1().Services(w.env.Namespace).Get(ctx, other, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return changeService(service, func(_ *testing.T, svc *corev1.Service) { svc.Spec.Selector = theirs.Spec.Selector })(t, ctx, w)
	}
}

// inPods runs commands in the container node of pods of a Deployment (by
// their index in name order), and mends by deleting those pods: their
// Deployment makes new ones, which never ran the commands.
func inPods(namespace, deployment string, argvs map[int][]string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		if namespace == directoryWorld {
			namespace = w.env.Namespace
		}
		pods := podsOf(t, ctx, w.client, namespace, deployment)
		mend := func() {
			var broken []corev1.Pod
			for i := range argvs {
				broken = append(broken, pods[i])
			}
			w.replacePods(t, ctx, namespace, deployment, broken...)
		}
		for _, i := range slices.Sorted(maps.Keys(argvs)) {
			// A pod just deployed may be Ready before its systemd has
			// finished starting and answers on its bus.
			err := poll.Eventually(ctx, poll.Probe{Endpoint: pods[i].Name, Expect: "systemd started", Within: 2 * time.Minute}, func(ctx context.Context) error {
				out, err := w.kube.Exec(ctx, namespace, pods[i].Name, plan.ContainerNode, []string{"systemctl", "show", "--property=SystemState", "--value"})
				if state := strings.TrimSpace(string(out)); err != nil || (state != "running" && state != "degraded") {
					return poll.Saw("%q (%v)", state, err)
				}
				return nil
			})
			if err == nil {
				_, err = w.kube.Exec(ctx, namespace, pods[i].Name, plan.ContainerNode, argvs[i])
			}
			if err != nil {
				mend() // what a part of the break did goes with the pods
				t.Fatal(err)
			}
		}
		return mend
	}
}

// stopServer stops, on the host (SIGSTOP), the service of a pod of a
// Deployment of the directory example, in container; SIGCONT mends it.
func stopServer(deployment string, pod int, container string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		p := podsOf(t, ctx, w.client, w.env.Namespace, deployment)[pod]
		pid := hostPID(t, ctx, w.env, p, container, true)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		return func() { syscall.Kill(pid, syscall.SIGCONT) }
	}
}

// killCompanion kills, on the host (SIGKILL), the companion of a pod of
// a Deployment of the directory example, as a crash would, and waits for
// the kubelet to record its end; the kubelet starts it again at once, so
// only the pod's record tells. Mending replaces the pod.
func killCompanion(deployment string, pod int) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		ns := w.env.Namespace
		p := podsOf(t, ctx, w.client, ns, deployment)[pod]
		restarts := func(p *corev1.Pod) int32 {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == plan.ContainerCompanion {
					return cs.RestartCount
				}
			}
			return -1
		}
		before := restarts(&p)
		if err := syscall.Kill(hostPID(t, ctx, w.env, p, plan.ContainerCompanion, false), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		mend := func() { w.replacePods(t, ctx, ns, deployment, p) }
		probe := poll.Probe{Endpoint: "pod " + ns + "/" + p.Name, Expect: "its companion's end recorded", Within: 2 * time.Minute}
		if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := w.client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n := restarts(got); n <= before {
				return poll.Saw("%d restarts of its companion", n)
			}
			return nil
		}); err != nil {
			mend()
			t.Fatal(err)
		}
		return mend
	}
}

// stalePublishedRoles stops the main pod's lldap-publish-roles and
// writes its entry as it stood before a member joined the group (the
// admin left out): a publisher that stopped while the directory changed.
// Mending replaces the main pod, whose publisher writes the entry anew.
func stalePublishedRoles(t *testing.T, ctx context.Context, w *realWorld) func() {
	inv := loadInventory(t, w.env)
	token, err := inventory.ReadSecret(inv.OpenBao.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	// Where the entry is, the cluster's inventory says.
	cluster, err := inventory.LoadBase(w.env.RealPods().Inventory)
	if err != nil {
		t.Fatal(err)
	}
	l := cluster.LDAP
	if l == nil || l.PublishedRoles == "" {
		t.Fatalf("%s names no ldap.publishedRoles", w.env.RealPods().Inventory)
	}
	mend := inPods(directoryWorld, "directory", map[int][]string{0: {"systemctl", "stop", "lldap-publish-roles.service"}})(t, ctx, w)
	if err := openbao.New(inv.OpenBao.Address, token).Write(ctx, l.PublishedRoles, map[string]any{"data": map[string]any{l.Group: "authelia-bind"}}); err != nil {
		mend()
		t.Fatal(err)
	}
	return mend
}

// wrongSecretInPod stops the agent of authelia's pod (SIGSTOP on the
// host, so that it does not write the file again) and writes a wrong
// value into its file session; the kubelet restarts the agent, killed,
// which writes every file anew.
func wrongSecretInPod(t *testing.T, ctx context.Context, w *realWorld) func() {
	ns := w.env.Namespace
	pod := podsOf(t, ctx, w.client, ns, "directory-authelia")[0]
	agent := hostPID(t, ctx, w.env, pod, plan.ContainerSidecar, false)
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if _, err := w.kube.Exec(ctx, ns, pod.Name, plan.ContainerSidecar, []string{"sh", "-c", "printf wrong > /run/secrets/session"}); err != nil {
		syscall.Kill(agent, syscall.SIGCONT)
		t.Fatal(err)
	}
	return func() {
		syscall.Kill(agent, syscall.SIGKILL)
		waitAvailable(t, ctx, w.client, ns, "directory-authelia")
	}
}

// identityInService mounts the pod's token into authelia's container too.
func identityInService(d *appsv1.Deployment) {
	c := &d.Spec.Template.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "identity", MountPath: plan.IdentityDir, ReadOnly: true})
}

// databaseInPod points lldap's database URL at its pod's own loopback: the
// agent's template of db.env, which new pods render.
func databaseInPod(t *testing.T, ctx context.Context, w *realWorld) func() {
	return replaceInConfig("directory-lldap", false, "directory-lldap-agent", "agent.json", "@postgres."+w.env.Namespace+".svc/", "@127.0.0.1:5432/")(t, ctx, w)
}

// databaseAtOwnName puts lldap's database at its pods' own DNS name: each
// pod is named lldap-db under a headless Service of their own (its
// hostname and subdomain), and the URL names that name. It resolves in
// each pod to the pod itself (the kubelet writes it to /etc/hosts), and
// in the cluster's DNS to every pod of the role.
func databaseAtOwnName(t *testing.T, ctx context.Context, w *realWorld) func() {
	ns := w.env.Namespace
	const subdomain = "directory-lldap-db"
	headless := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: subdomain}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone,
		Selector:  map[string]string{names.LabelNode: "directory", names.LabelRole: "lldap"},
		Ports:     []corev1.ServicePort{{Name: "pg", Port: 5432}},
	}}
	if _, err := w.client.CoreV1().Services(ns).Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url := replaceInConfig("directory-lldap", false, "directory-lldap-agent", "agent.json", "@postgres."+ns+".svc/", "@lldap-db."+subdomain+"."+ns+".svc.cluster.local:5432/")(t, ctx, w)
	named := changeDeployment("directory-lldap", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Hostname, d.Spec.Template.Spec.Subdomain = "lldap-db", subdomain
	})(t, ctx, w)
	return func() {
		named()
		url()
		if err := w.client.CoreV1().Services(ns).Delete(ctx, subdomain, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}

// mainAgentReadsElsewhere points the main pod's OpenBao agent at another
// KV entry than the lldap role's sidecar reads: a stale copy of the bind
// password, with another value, which the main pod's policy lets it read.
// The reader's file then holds a password the role does not.
func mainAgentReadsElsewhere(t *testing.T, ctx context.Context, w *realWorld) func() {
	// The cluster's pods log in to the local environment's OpenBao.
	inv := loadInventory(t, w.env)
	token, err := inventory.ReadSecret(inv.OpenBao.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	bao := openbao.New(inv.OpenBao.Address, token)
	const entry, stale = "secret/data/lldap/authelia-bind", "secret/data/lldap/authelia-bind-stale"
	policy := "sys/policies/acl/" + w.env.Namespace + "-" + names.MainRole
	var was struct {
		Data struct {
			Policy string `json:"policy"`
		} `json:"data"`
	}
	if err := bao.Do(ctx, http.MethodGet, policy, nil, &was); err != nil || !strings.Contains(was.Data.Policy, entry) {
		t.Fatalf("the main pod's policy %s: %v %q", policy, err, was.Data.Policy)
	}
	writes := []struct {
		path string
		data any
	}{
		{stale, map[string]any{"data": map[string]any{"env": "LLDAP_LDAP_USER_PASS=a-stale-password\n"}}},
		{policy, map[string]any{"policy": was.Data.Policy + fmt.Sprintf("path %q { capabilities = [\"read\"] }\n", stale)}},
	}
	for _, wr := range writes {
		if err := bao.Write(ctx, wr.path, wr.data); err != nil {
			t.Fatal(err)
		}
	}
	// The path as agent.json quotes it, inside the template's string.
	config := replaceInConfig(w.env.Cluster.Name, false, w.env.Cluster.Name+"-agent", "agent.json", entry+`\"`, stale+`\"`)(t, ctx, w)
	return func() {
		config()
		if err := bao.Write(ctx, policy, map[string]any{"policy": was.Data.Policy}); err != nil {
			t.Error(err)
		}
		if err := bao.Do(ctx, http.MethodDelete, strings.Replace(stale, "/data/", "/metadata/", 1), nil, nil); err != nil {
			t.Error(err)
		}
	}
}

// mainAgentRendersDaily gives the main pod's OpenBao agent a render
// interval of a day, as an agent left at a long default would have.
// Such an agent rendered the entry once when it started, long before a
// rotation: the break is in place once the new main pod's copy is the
// role's (which its agents render every 2 s from the entry). On a
// loaded node the agent's first render can come seconds after the pod
// is ready, after the scenario's write, and the copy then fails only
// once the old value is back.
func mainAgentRendersDaily(t *testing.T, ctx context.Context, w *realWorld) func() {
	mend := replaceInConfig(w.env.Cluster.Name, false, w.env.Cluster.Name+"-agent", "agent.json", `"static_secret_render_interval": "2s"`, `"static_secret_render_interval": "24h"`)(t, ctx, w)
	ns := w.env.Namespace
	read := func(ctx context.Context, deployment, container, file string) (string, error) {
		pods := podsOf(t, ctx, w.client, ns, deployment)
		if len(pods) == 0 {
			return "", fmt.Errorf("Deployment %s has no Running pod", deployment)
		}
		out, err := w.kube.Exec(ctx, ns, pods[0].Name, container, []string{"cat", file})
		return strings.TrimSuffix(string(out), "\n"), err
	}
	probe := poll.Probe{Endpoint: "the main pod's /var/lib/lldap-reader/bind-password", Expect: "the role's bind-password, as the agent renders it when it starts", Within: 2 * time.Minute}
	if err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
		main, err := read(ctx, w.env.Cluster.Name, plan.ContainerNode, "/var/lib/lldap-reader/bind-password")
		if err != nil {
			return err
		}
		role, err := read(ctx, "directory-lldap", "lldap", plan.SecretsDir+"/bind-password")
		if err != nil {
			return err
		}
		if main == "" || main != role {
			return poll.Saw("not yet rendered")
		}
		return nil
	}); err != nil {
		mend()
		t.Fatal(err)
	}
	return mend
}

// autheliaMetricsElsewhere serves authelia's metrics at another path than
// the node's: the Service still points scrapers at the node's.
var autheliaMetricsElsewhere = replaceInConfig("directory-authelia", true, "directory-authelia-podroles", "configuration.yml", "tcp://:9959/metrics", "tcp://:9959/elsewhere")

// replaceInConfig replaces old with new in a key of the configuration of
// a Deployment of the directory example (a ConfigMap's data, or a
// Secret's), and replaces its pods, which read it when they start;
// mending puts it back, in new pods again.
func replaceInConfig(deployment string, secret bool, name, key, old, new string) func(t *testing.T, ctx context.Context, w *realWorld) func() {
	return func(t *testing.T, ctx context.Context, w *realWorld) func() {
		ns := w.env.Namespace
		read := func() string {
			if secret {
				got, err := w.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return string(got.Data[key])
			}
			got, err := w.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return got.Data[key]
		}
		set := func(value string) {
			var err error
			if secret {
				var got *corev1.Secret
				if got, err = w.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
					got.Data[key] = []byte(value)
					_, err = w.client.CoreV1().Secrets(ns).Update(ctx, got, metav1.UpdateOptions{})
				}
			} else {
				var got *corev1.ConfigMap
				if got, err = w.client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
					got.Data[key] = value
					_, err = w.client.CoreV1().ConfigMaps(ns).Update(ctx, got, metav1.UpdateOptions{})
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			w.replacePods(t, ctx, ns, deployment, podsOf(t, ctx, w.client, ns, deployment)...)
		}
		before := read()
		if !strings.Contains(before, old) {
			t.Fatalf("%s of %s has no %q", key, name, old)
		}
		set(strings.ReplaceAll(before, old, new))
		return func() { set(before) }
	}
}

// dropIn is a shell command that gives a unit of a node-image pod a
// drop-in, text (printf's format: \n for a line end), in /run, which the
// pod's replacement forgets.
func dropIn(unit, text string) string {
	dir := "/run/systemd/system/" + unit + ".service.d"
	return "mkdir -p " + dir + " && printf '" + text + "' > " + dir + "/break.conf"
}

// noCondition is a drop-in that clears the conditions that keep a unit
// from the pods its list does not put it in.
const noCondition = "[Unit]\\nConditionPathExists=\\n"

// clusterCases are the breaking cases of the real pods, by scenario; the
// table takes them in.
func clusterCases() map[string][]breakingCase {
	unitsBreak := inPods(mastodonWorld, "mastodon-sidekiq", map[int][]string{
		// A main unit started in a sidekiq pod, its condition dropped.
		0: {"sh", "-c", dropIn("mastodon-web", noCondition) + " && systemctl daemon-reload && systemctl start mastodon-web.service"},
		// A shared unit stopped in the other.
		1: {"systemctl", "stop", "prometheus-node-exporter.service"},
	})
	// A main unit armed in a sidekiq pod, never started: its condition
	// dropped (a drop-in), and then arm, if any, run. The case fails for
	// what starts it there, by.
	armedInSidekiq := func(name, unit, arm, by string) breakingCase {
		cmd := dropIn(unit, noCondition)
		if arm != "" {
			cmd += " && " + arm
		}
		return breakingCase{
			name: name, where: onCluster, world: mastodonWorld,
			breakCluster: inPods(mastodonWorld, "mastodon-sidekiq", map[int][]string{0: {"sh", "-c", cmd + " && systemctl daemon-reload"}}),
			reasons:      []string{"unit " + unit + " (mainUnits) will start in pod {mastodon-sidekiq#0} of role sidekiq, where its list does not permit it: " + by + " is active and starts it, and its conditions hold there"},
		}
	}
	// A trigger of mastodon-web armed at runtime, after the unit left
	// multi-user.target (which would start it too).
	webArmedBy := func(kind, section string) breakingCase {
		return armedInSidekiq("a main unit armed by a "+kind+" in a sidekiq pod at runtime", "mastodon-web",
			"systemctl disable -q mastodon-web.service && printf '"+section+"' > /run/systemd/system/mastodon-web."+kind+
				" && systemctl daemon-reload && systemctl start mastodon-web."+kind, "mastodon-web."+kind)
	}
	lldapServiceSelectsAuthelia := serviceSelectsOtherRole("directory-lldap", "directory-authelia")
	return map[string][]breakingCase{
		"deployments/companion-stays-running": {
			{
				// The kubelet starts it again at once: the pod's phase,
				// its readiness and the companion's state all look right.
				name: "lldap's companion killed while its service runs on", where: onCluster,
				breakCluster: killCompanion("directory-lldap", 0),
				reasons:      []string{"of role lldap: container companion ended ", "ended without its service"},
			},
		},
		"deployments/services-stay-up": {
			{
				// Ready again a second later, and ready at every look of
				// the run after: the counts, the template and the pods'
				// phase all look right.
				name: "authelia stopped once by the kubelet for a liveness probe that failed, ready again", where: onCluster,
				breakCluster: stoppedOnceByLiveness("directory-authelia"),
				reasons:      []string{"pod {directory-authelia#0} of role authelia: its container authelia was stopped by the kubelet in this pod (restart 1)", "Container authelia failed liveness probe, will be restarted"},
			},
		},
		"ldap/roles-published": {
			{
				name: "the main pod's lldap-publish-roles stopped, its entry from before the admin joined", where: onCluster,
				breakCluster: stalePublishedRoles,
				reasons:      []string{`"authelia-bind", which lacks admin, in the group`},
			},
		},
		"deployments/deployments-as-planned": {
			{
				name: "a rollout stuck on a new template while the old pods stay ready", where: onCluster,
				breakCluster: stuckRollout("directory-lldap"),
				reasons:      []string{"role lldap: Deployment directory-lldap has 3 pods for spec.replicas 2: 1 on its current template, 2 ready, 2 available: its rollout is not done", "Pending, not scheduled (Unschedulable: "},
			},
			{
				// The new pod counts as updated, and the old one is the
				// ready one: the counts of the template alone pass it.
				name: "a rollout of the one replica of authelia stuck while the old pod stays ready", where: onCluster,
				breakCluster: stuckRollout("directory-authelia"),
				reasons:      []string{"role authelia: Deployment directory-authelia has 2 pods for spec.replicas 1: 1 on its current template, 1 ready, 1 available: its rollout is not done", "Pending, not scheduled (Unschedulable: "},
			},
			{
				name: "a new template of authelia whose image cannot be pulled, the old pod ready", where: onCluster,
				breakCluster: imageNotPulled("directory-authelia", "authelia"),
				reasons:      []string{"role authelia: Deployment directory-authelia has 2 pods for spec.replicas 1: 1 on its current template, 1 ready, 1 available: its rollout is not done", "container authelia waiting ("},
			},
			{
				name: "the tag of lldap's image moved, and one replica started again on it", where: onCluster,
				breakCluster: movedTag("directory-lldap", "lldap"),
				reasons:      []string{"runs as two contents: ", "in pod {directory-lldap#0} (role lldap, container ", "the reference moved between their pulls"},
			},
			{
				// The restart is left in place, in new pods, once resumed.
				name: "lldap's Deployment paused, then restarted", where: onCluster,
				breakCluster: pausedRestart("directory-lldap"),
				reasons:      []string{"role lldap: Deployment directory-lldap has 2 pods for spec.replicas 2: 0 on its current template, 2 ready, 2 available: its rollout is not done (the Deployment is paused, spec.paused: its controller rolls out no change)"},
			},
			{
				name: "a replica of lldap less", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", func(d *appsv1.Deployment) { one := int32(1); d.Spec.Replicas = &one }),
				reasons:      []string{"Deployment directory/directory-lldap", "role lldap: spec.replicas 1, planned 2"},
			},
			{
				name: "a variable of lldap's image with another value", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", setVariable("lldap", "LLDAP_LDAPS_OPTIONS__PORT", "6361")),
				reasons:      []string{`role lldap: container lldap has LLDAP_LDAPS_OPTIONS__PORT="6361", the node's fediversity.podRoles.services.lldap.environment says "6360"`},
				alsoFails:    map[string]string{"deployments/service-variables-as-running": "the service's processes get the template's value"},
			},
			{
				name: "lldap's companion from the sidecar's image", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", onCompanion(func(d *appsv1.Deployment, c *corev1.Container) {
					c.Image = d.Spec.Template.Spec.InitContainers[0].Image
				})),
				reasons: []string{"role lldap runs image", "in container companion, not its service's"},
			},
			{
				name: "lldap's companion running another program", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", onCompanion(func(_ *appsv1.Deployment, c *corev1.Container) {
					c.Command, c.Args = []string{"sh", "-c", "exec sleep infinity"}, nil
				})),
				reasons: []string{`role lldap: container companion runs "sh -c exec sleep infinity", not the program /bin/companion`},
			},
			{
				name: "lldap's companion without the role's secrets", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", onCompanion(func(_ *appsv1.Deployment, c *corev1.Container) {
					c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == plan.SecretsDir })
				})),
				reasons: []string{"role lldap: container companion mounts nothing at /run/secrets, where the sidecar writes the role's secrets"},
			},
			{
				name: "authelia's sidecar without its startup probe", where: onCluster,
				breakCluster: changeDeployment("directory-authelia", func(d *appsv1.Deployment) { d.Spec.Template.Spec.InitContainers[0].StartupProbe = nil }),
				reasons:      []string{"role authelia: the sidecar secrets has no startup probe: Kubernetes starts the service before its secrets are files"},
			},
		},
		"secrets/service-started-after-secrets": {{
			name: "authelia's sidecar without its startup probe, its agent slow to start", where: onCluster,
			breakCluster: changeDeployment("directory-authelia", serviceBeforeSecrets),
			run:          "secrets/service-started-after-secrets",
			reasons:      []string{"pod {directory-authelia#0}: its service", "before jwt existed: the file was written at"},
		}},
		"ldap/plain-port-not-on-service": {{
			name: "the plain LDAP port behind another port of lldap's Service", where: onCluster,
			breakCluster: servicePortTo("directory-lldap", 16360, localenv.PortLDAP),
			reasons:      []string{`the Service directory-lldap sends its port 16360 ("ldap") to the pods' plain LDAP port 3890`},
			alsoFails:    map[string]string{"deployments/services-as-planned": "the Service has a port that is not planned"},
		}},
		"deployments/services-as-planned": {
			{
				// With lldap, the LDAPS port of the Service would reach its
				// HTTP server, which holds any connection open.
				name: "lldap's Service sends its LDAPS port to the pods' HTTP port", where: onCluster,
				breakCluster: serviceTargetTo("directory-lldap", 6360, 17170),
				reasons:      []string{"the Service directory-lldap: its port 6360/TCP (target port 17170) reaches port 17170 of pod {directory-lldap#0}, where role lldap serves it on port 6360 as planned"},
				alsoFails:    map[string]string{"deployments/ports-from-main-pod": "the stand-in of lldap (slapd) serves nothing on 17170, where the LDAPS port now leads"},
			},
			{
				name: "lldap's Service publishes the addresses of pods that are not ready", where: onCluster,
				breakCluster: changeService("directory-lldap", func(_ *testing.T, svc *corev1.Service) { svc.Spec.PublishNotReadyAddresses = true }),
				reasons:      []string{"the Service directory-lldap publishes the addresses of pods that are not ready (spec.publishNotReadyAddresses)"},
			},
			{
				// On the one node of the test cluster every client is on
				// the pods' node: nothing else shows it.
				name: "authelia's Service keeps traffic on the client's node", where: onCluster,
				breakCluster: changeService("directory-authelia", func(_ *testing.T, svc *corev1.Service) {
					local := corev1.ServiceInternalTrafficPolicyLocal
					svc.Spec.InternalTrafficPolicy = &local
				}),
				reasons: []string{"the Service directory-authelia has spec.internalTrafficPolicy Local"},
			},
			{
				name: "an EndpointSlice of lldap's Service made by hand, to authelia's pod", where: onCluster,
				breakCluster: foreignSlice("directory-lldap", plan.PortName(facts.Port{Port: 17170, Protocol: facts.ProtocolTCP}), "directory-authelia", 9091),
				reasons:      []string{`the Service directory-lldap has EndpointSlices that Kubernetes did not make from its selector: directory-lldap-extra (managed by "operator", addresses `},
			},
			{
				name: "the plain LDAP port on lldap's Service", where: onCluster,
				breakCluster: plainPortOnService,
				reasons:      []string{"the Service directory-lldap has ports 17170/TCP,3890/TCP,6360/TCP, planned exactly 17170/TCP,6360/TCP"},
			},
			{
				name: "lldap's Service selects authelia's pods", where: onCluster,
				breakCluster: lldapServiceSelectsAuthelia,
				reasons: []string{
					"the Service directory-lldap leads to pods {directory-authelia#0}, not to exactly the ready pods of role lldap (pods {directory-lldap#0}, {directory-lldap#1})",
					"extra {directory-authelia#0} (role authelia); missing {directory-lldap#0}, {directory-lldap#1}",
				},
				alsoFails: map[string]string{"deployments/ports-from-main-pod": "the Service leads to pods that serve none of its ports"},
			},
		},
		"ldap/service-ldaps-bind": {{
			name: "lldap's Service selects authelia's pods", where: onCluster,
			breakCluster: lldapServiceSelectsAuthelia,
			reasons:      []string{"directory-lldap.directory.svc.cluster.local: port 6360 is not reachable: the Service directory-lldap leads to pods {directory-authelia#0}", "which serve none of its ports"},
			alsoFails: map[string]string{
				"ldap/wrong-ca-refused":   "its handshake goes through the Service, which reaches no pod",
				"ldap/wrong-name-refused": "its handshake goes through the Service, which reaches no pod",
				"ldap/roles-published":    "it reads the group through the Service, which reaches no pod of lldap",
			},
		}},
		"deployments/service-units-not-in-node-pods": {{
			name: "lldap's unit started in the main pod", where: onCluster,
			breakCluster: inPods(directoryWorld, "directory", map[int][]string{0: {"systemctl", "start", "lldap.service"}}),
			reasons:      []string{"unit lldap (service of role lldap) ran in pod {directory#0} of role main, where its list does not permit it"},
		}},
		"units/units-where-their-lists-permit": {
			{
				name: "a main unit started in a sidekiq pod, a shared unit stopped in the other", where: onCluster, world: mastodonWorld,
				breakCluster: unitsBreak,
				reasons: []string{
					"unit mastodon-web (mainUnits) ran in pod {mastodon-sidekiq#0} of role sidekiq, where its list does not permit it",
					"unit prometheus-node-exporter (sharedUnits) is not active in pod {mastodon-sidekiq#1} of role sidekiq",
				},
			},
			armedInSidekiq("a main unit whose condition was dropped in a sidekiq pod, wanted by multi-user.target", "mastodon-web", "", "multi-user.target"),
			armedInSidekiq("a main unit of a timer whose condition was dropped in a sidekiq pod", "acme-order-renew-mastodon.example.org", "", "acme-order-renew-mastodon.example.org.timer"),
			webArmedBy("socket", "[Socket]\\nListenStream=/run/podroles-break.sock\\n"),
			webArmedBy("path", "[Path]\\nPathExists=/run/podroles-break-path\\n"),
			{
				// Masked while it runs, as an operator hides a unit: its
				// LoadState says masked, and it runs on. A mask in
				// /run/systemd/system loses to the image's unit in
				// /etc/systemd/system; one in /run/systemd/transient wins.
				name: "a main unit started in a sidekiq pod, then masked", where: onCluster, world: mastodonWorld,
				breakCluster: inPods(mastodonWorld, "mastodon-sidekiq", map[int][]string{0: {"sh", "-c",
					dropIn("mastodon-web", noCondition) + " && systemctl daemon-reload && systemctl start mastodon-web.service" +
						" && mkdir -p /run/systemd/transient && ln -s /dev/null /run/systemd/transient/mastodon-web.service && systemctl daemon-reload"}}),
				reasons: []string{"unit mastodon-web (mainUnits) ran in pod {mastodon-sidekiq#0} of role sidekiq, where its list does not permit it (LoadState=masked ActiveState=active"},
			},
			{
				// Up three seconds in four: a look at a moment it runs sees
				// it active; systemd's NRestarts keeps count.
				name: "a shared unit in a restart loop in a sidekiq pod", where: onCluster, world: mastodonWorld,
				breakCluster: inPods(mastodonWorld, "mastodon-sidekiq", map[int][]string{1: {"sh", "-c",
					dropIn("prometheus-node-exporter", "[Service]\\nRuntimeMaxSec=3\\nRestart=always\\nRestartSec=1\\n") +
						" && systemctl daemon-reload && systemctl restart prometheus-node-exporter.service"}}),
				reasons: []string{"unit prometheus-node-exporter (sharedUnits) restarted in pod {mastodon-sidekiq#1} of role sidekiq, where its list puts it: systemd restarted it while watched (NRestarts "},
			},
			{
				// Its timer waits on, as it does after any run: only the
				// unit's Result says the run failed.
				name: "a main unit of a timer whose run failed in the main pod", where: onCluster, world: mastodonWorld,
				breakCluster: inPods(mastodonWorld, "mastodon", map[int][]string{0: {"sh", "-c",
					dropIn("acme-order-renew-mastodon.example.org", "[Service]\\nExecStartPre=\\nExecStart=\\nExecStart=/bin/sh -c \"exit 3\"\\n") +
						" && systemctl daemon-reload && { systemctl start acme-order-renew-mastodon.example.org.service; true; }"}}),
				reasons: []string{"unit acme-order-renew-mastodon.example.org (mainUnits) failed in pod {mastodon#0} of role main, where its list puts it: its last run failed (Result=exit-code", "acme-order-renew-mastodon.example.org.timer will start it again"},
			},
		},
		"ldap/each-pod-binds": {{
			name: "the second lldap pod's slapd stopped", where: onCluster,
			breakCluster: stopServer("directory-lldap", 1, "lldap"),
			// Alone: through the Service, kube-proxy picks a replica for
			// each connection, so service-ldaps-bind from the main pod
			// meets the stopped one by chance.
			run:     "ldap/each-pod-binds",
			reasons: []string{"pod {directory-lldap#1}: at ldaps://"},
		}},
		"secrets/files-hold-their-values": {{
			name: "authelia's agent stopped and its session file wrong", where: onCluster,
			breakCluster: wrongSecretInPod,
			run:          "secrets/files-hold-their-values",
			reasons:      []string{"role authelia, pod {directory-authelia#0}, secret session", "5 bytes that are not field value of secret/data/authelia/session"},
		}},
		"secrets/identity-not-readable": {{
			name: "the pod's token mounted into authelia's container", where: onCluster,
			breakCluster: changeDeployment("directory-authelia", identityInService),
			reasons:      []string{"container authelia reads the pod's service-account token /var/run/secrets/kubernetes.io/serviceaccount/token"},
		}},
		"rotation/new-credential-restarts-authelia": {
			{
				name: "authelia's supervisor restarts it for no secret", where: onCluster,
				breakCluster: changeDeployment("directory-authelia", withoutRestart),
				run:          "rotation/new-credential-restarts-authelia",
				reasons:      []string{"pod {directory-authelia#0} (uid", "to restart its service with a new credential within the TTL", "saw 0 exits"},
			},
			{
				// A quiet exit after the new value, which the kubelet's
				// events alone tell from a restart. (A case of the KV
				// rotation would put the old value back, restarting
				// the pods twice, which later cases can only call
				// inconclusive.)
				name: "authelia's supervisor restarts nothing, and a liveness probe stops it once db.env changes", where: onCluster,
				breakCluster: changeDeployment("directory-authelia", livenessOn("db.env")),
				run:          "rotation/new-credential-restarts-authelia",
				reasons:      []string{"stopped by the kubelet: Container authelia failed liveness probe, will be restarted", "which is no restart for a new credential"},
			},
		},
		"postgres/data-outside-pod": {
			{
				name: "lldap's database URL at its pod's own loopback", where: onCluster,
				breakCluster: databaseInPod,
				reasons:      []string{"pod {directory-lldap#0} reads its database (secret db.env) at 127.0.0.1:5432, in pod {directory-lldap#0} of role lldap (the pod's own loopback): its data would go with the pod"},
				// Its URL leads where no database answers (the stand-in serves none).
				alsoFails: map[string]string{"postgres/one-opentofu-state": "the role's URL leads to its pod's loopback, where nothing serves"},
			},
			{
				// The URL names the Service; the name alone leads out of
				// the pods, and only the pod's resolver tells.
				name: "a hostAlias of lldap's pods that sends the database's Service name to their own loopback", where: onCluster,
				breakCluster: changeDeployment("directory-lldap", func(d *appsv1.Deployment) {
					d.Spec.Template.Spec.HostAliases = []corev1.HostAlias{{IP: "127.0.0.1", Hostnames: []string{"postgres." + d.Namespace + ".svc"}}}
				}),
				reasons:   []string{"pod {directory-lldap#0} reads its database (secret db.env) at postgres.directory.svc, in pod {directory-lldap#0} of role lldap (the pod's own loopback: postgres.directory.svc resolves to 127.0.0.1 in pod {directory-lldap#0}): its data would go with the pod"},
				alsoFails: map[string]string{"postgres/one-opentofu-state": "the role's URL leads to its pod's loopback, where nothing serves"},
			},
			{
				// Each pod's own DNS name, under a headless Service: only
				// the pod's resolver says it is the pod itself.
				name: "lldap's database URL at its pods' own DNS name, under a headless Service", where: onCluster,
				breakCluster: databaseAtOwnName,
				reasons:      []string{"pod {directory-lldap#0} reads its database (secret db.env) at lldap-db.directory-lldap-db.directory.svc.cluster.local:5432, in pod {directory-lldap#0} of role lldap", "(lldap-db.directory-lldap-db.directory.svc.cluster.local resolves to ", "its data would go with the pod"},
				alsoFails:    map[string]string{"postgres/one-opentofu-state": "the role's URL leads to its own pod, where nothing serves"},
			},
		},
		"ldap/reader-password-from-kv": {{
			name: "the main pod's agent reading a stale copy of the bind password's KV entry", where: onCluster,
			breakCluster: mainAgentReadsElsewhere,
			run:          "ldap/reader-password-from-kv",
			reasons:      []string{"the main pod's /var/lib/lldap-reader/bind-password (16 bytes) not field env of secret/data/lldap/authelia-bind, variable LLDAP_LDAP_USER_PASS with no line end"},
		}},
		"rotation/reader-password-follows-rotation": {{
			// The main pod's agent renders the entry when it starts, and
			// not again within the scenario: its copy is right until the
			// first rotation.
			name: "the main pod's agent rendering the reader's password once a day", where: onCluster,
			breakCluster: mainAgentRendersDaily,
			run:          "rotation/reader-password-follows-rotation",
			reasons:      []string{"the main pod's /var/lib/lldap-reader/bind-password (", " bytes) not the new value (32 bytes)"},
		}},
		"deployments/ports-from-main-pod": {
			{
				name: "a port on authelia's Service that no container serves", where: onCluster,
				breakCluster: servicePortTo("directory-authelia", 7000, 7000),
				reasons:      []string{"at directory-authelia.directory.svc:7000 (Service directory-authelia of role authelia): expected a connection from the main pod"},
				alsoFails:    map[string]string{"deployments/services-as-planned": "the Service has a port that is not planned"},
			},
			{
				name: "authelia's metrics served at another path than the node's", where: onCluster,
				breakCluster: autheliaMetricsElsewhere,
				reasons:      []string{"(Service directory-authelia of role authelia): expected a connection from the main pod", "GET /metrics answered 404 Not Found"},
			},
		},
		"deployments/service-variables-as-running": {{
			name: "lldap's command run by a shell that sets a variable of its image otherwise", where: onCluster,
			breakCluster: changeDeployment("directory-lldap", variableInCommand("LLDAP_LDAPS_OPTIONS__ENABLED", "false")),
			reasons:      []string{"pod {directory-lldap#0} of role lldap: process 1 has LLDAP_LDAPS_OPTIONS__ENABLED=\"false\", the node gives \"true\""},
		}},
		"deployments/services-without-systemd": {{
			name: "a program named systemd started in authelia's container", where: onCluster,
			breakCluster: inServiceContainer("directory-authelia", "authelia", `cp "$(command -v sleep)" /tmp/systemd && /tmp/systemd 3600 >/dev/null 2>&1 &`),
			reasons:      []string{"pod {directory-authelia#0} of role authelia: process", "(systemd) run in container authelia, whose service runs with no systemd"},
		}},
		"rotation/secret-without-restart-restarts-nothing": {{
			// After the cases before, authelia's container waits out a
			// grown back-off: the exit counts from the kubelet's record.
			name: "authelia's supervisor restarts it for jwt, a secret without restart", where: onCluster,
			breakCluster: changeDeployment("directory-authelia", restartOn("jwt")),
			run:          "rotation/secret-without-restart-restarts-nothing",
			reasons:      []string{"pod {directory-authelia#0}", "its service exited (", "and no secret with restart changed: none was due"},
		}},
		"rotation/sidecar-restart-restarts-nothing": {{
			name: "the worker's supervisor restarts it for the agent's token, which a restarted sidecar writes anew", where: onCluster,
			breakCluster: restartOnAgentToken("directory-worker"),
			run:          "rotation/sidecar-restart-restarts-nothing",
			reasons:      []string{"pod {directory-worker#0}: its service exited (", "after its sidecar restarted, though no secret with restart changed"},
		}},
		"rotation/sidecar-restart-restarts-pki": {{
			name: "authelia's supervisor restarts it for no secret", where: onCluster,
			breakCluster: changeDeployment("directory-authelia", withoutRestart),
			run:          "rotation/sidecar-restart-restarts-pki",
			reasons:      []string{"a new tls.pem (a secret with parameters and restart), and the service's 0 exits still"},
		}},
	}
}
