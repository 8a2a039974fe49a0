package scenarios

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios/world"
)

func deploymentWithStatus(replicas int32, st appsv1.DeploymentStatus) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "directory-authelia", Namespace: "directory", Generation: 2},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "authelia"}}},
		Status:     st,
	}
}

// A stuck rollout of one replica counts its one new pod as updated, and
// the old pod is the ready one: the counts of the pods in all and the
// pods not ready tell.
func TestRolledOut(t *testing.T) {
	pending := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "directory-authelia-new", Namespace: "directory", Labels: map[string]string{"role": "authelia", appsv1.DefaultDeploymentUniqueLabelKey: "b"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"},
		}},
	}
	notReady := func() string { return whyNotReady([]corev1.Pod{*pending}) }
	cases := []struct {
		name string
		d    *appsv1.Deployment
		want string
	}{
		{"rolled out", deploymentWithStatus(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}), ""},
		{"stuck, one replica", deploymentWithStatus(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 1}),
			"role authelia: Deployment directory-authelia has 2 pods for spec.replicas 1: 1 on its current template, 1 ready, 1 available: its rollout is not done; pod directory-authelia-new (template b): Pending, not scheduled (Unschedulable: 0/1 nodes are available)"},
		{"paused on a changed template", func() *appsv1.Deployment {
			d := deploymentWithStatus(2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2})
			d.Spec.Paused = true
			return d
		}(), "role authelia: Deployment directory-authelia has 2 pods for spec.replicas 2: 0 on its current template, 2 ready, 2 available: its rollout is not done (the Deployment is paused, spec.paused: its controller rolls out no change); pod directory-authelia-new (template b): Pending, not scheduled (Unschedulable: 0/1 nodes are available)"},
		{"not seen", deploymentWithStatus(1, appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}),
			"role authelia: Deployment directory-authelia is at generation 2, its controller saw 1"},
		{"past its deadline", deploymentWithStatus(1, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: "ReplicaSet x has timed out progressing"}}}),
			"role authelia: Deployment directory-authelia is not progressing (ProgressDeadlineExceeded: ReplicaSet x has timed out progressing)"},
	}
	for _, c := range cases {
		err := rolloutState(c.d, "authelia", notReady)
		if got := errText(err); got != c.want {
			t.Errorf("%s:\n got  %s\n want %s", c.name, got, c.want)
		}
	}
}

// A pod whose image was changed in place keeps its template's hash.
func TestAsTemplate(t *testing.T) {
	d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "authelia", Image: "authelia:4"}}}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "authelia", Image: "authelia:4"}}}}
	if err := asTemplate(d, pod, "authelia"); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Image = "evil:1"
	if err := asTemplate(d, pod, "authelia"); !strings.Contains(errText(err), "pod p runs image evil:1 in container authelia, its Deployment's template authelia:4") {
		t.Errorf("got %v", err)
	}
	// The sidecar, an init container, can be changed in place too.
	pod.Spec.Containers[0].Image = "authelia:4"
	d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "secrets", Image: "bao:2"}}
	if err := asTemplate(d, pod, "authelia"); !strings.Contains(errText(err), "pod p has init containers none, its Deployment's template secrets") {
		t.Errorf("no sidecar: got %v", err)
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "secrets", Image: "evil:2"}}
	if err := asTemplate(d, pod, "authelia"); !strings.Contains(errText(err), "pod p runs image evil:2 in container secrets, its Deployment's template bao:2") {
		t.Errorf("another sidecar image: got %v", err)
	}
	pod.Spec.InitContainers[0].Image = "bao:2"
	if err := asTemplate(d, pod, "authelia"); err != nil {
		t.Errorf("as its template: %v", err)
	}
}

// TestServiceRouting: a Service's type and the settings that send its
// traffic to pods that are not ready, or to the client's node only, are
// named.
func TestServiceRouting(t *testing.T) {
	want := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "directory-lldap", Labels: map[string]string{names.LabelRole: "lldap"}}}
	local := corev1.ServiceInternalTrafficPolicyLocal
	cluster := corev1.ServiceInternalTrafficPolicyCluster
	for _, c := range []struct {
		name string
		got  corev1.ServiceSpec
		want string
	}{
		{"as planned, as the API server defaults it", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, InternalTrafficPolicy: &cluster}, ""},
		{"as planned, unset", corev1.ServiceSpec{}, ""},
		{"a NodePort", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}, "the Service directory-lldap is of type NodePort, planned ClusterIP"},
		{"not-ready addresses", corev1.ServiceSpec{PublishNotReadyAddresses: true}, "publishes the addresses of pods that are not ready (spec.publishNotReadyAddresses), so its clients reach pods of role lldap while they start or restart"},
		{"local traffic", corev1.ServiceSpec{InternalTrafficPolicy: &local}, "has spec.internalTrafficPolicy Local: a client reaches only the pods on its own node"},
	} {
		got := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "directory-lldap"}, Spec: c.got}
		err := serviceRouting(want, got)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
}

// TestForeignSlices: an EndpointSlice of a Service that the endpoint
// controller did not make is named with who manages it and its addresses.
func TestForeignSlices(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "directory-lldap"}}
	slice := func(name, by string, addrs ...string) discoveryv1.EndpointSlice {
		es := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}}}
		if by != "" {
			es.Labels[discoveryv1.LabelManagedBy] = by
		}
		for _, a := range addrs {
			es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}})
		}
		return es
	}
	b := world.ServiceBackends{Ready: []string{"lldap-a", "lldap-b"}, IPs: map[string]string{"198.18.0.5": "lldap-a", "198.18.0.6": "lldap-b"}}
	own := slice("directory-lldap-abc12", "endpointslice-controller.k8s.io", "198.18.0.5", "198.18.0.6")
	if err := foreignSlices(svc, []discoveryv1.EndpointSlice{own}, b); err != nil {
		t.Errorf("the controller's own: %v", err)
	}
	err := foreignSlices(svc, []discoveryv1.EndpointSlice{own, slice("extra", "someone", "198.18.0.9"), slice("bare", "")}, b)
	want := `the Service directory-lldap has EndpointSlices that Kubernetes did not make from its selector: bare (managed by "", addresses none); extra (managed by "someone", addresses 198.18.0.9)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v\nwant %q", err, want)
	}
	// The controller's label is only a label: a slice that has it, with
	// an address of no ready pod the selector selects, is named too.
	forged := slice("directory-lldap-zzz99", "endpointslice-controller.k8s.io", "198.18.0.9")
	err = foreignSlices(svc, []discoveryv1.EndpointSlice{own, forged}, b)
	want = "the Service directory-lldap sends traffic to 198.18.0.9 (EndpointSlice directory-lldap-zzz99), which is no ready pod that its selector selects"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a forged label: got %v\nwant %q", err, want)
	}
	// An endpoint that is not ready gets no traffic: a pod that stops, or
	// one that its selector no longer selects, while the controller
	// catches up.
	notReady := false
	stopping := slice("directory-lldap-abc12", "endpointslice-controller.k8s.io", "198.18.0.5", "198.18.0.7")
	stopping.Endpoints[1].Conditions.Ready = &notReady
	if err := foreignSlices(svc, []discoveryv1.EndpointSlice{stopping}, b); err != nil {
		t.Errorf("a pod that stops: %v", err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), "saw ")
}

// TestCompareBackends: services-as-planned names the Service, the pods
// behind it that are not its role's (with whose they are) and the role's
// ready pods that are not behind it, or a port that misses a pod.
func TestCompareBackends(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Selector: map[string]string{"role": "authelia"},
		Ports:    []corev1.ServicePort{{Name: "p6360-tcp", Port: 6360, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("p6360-tcp")}, {Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9100)}},
	}}
	svc.Name = "directory-lldap"
	byRole := map[string][]string{"lldap": {"lldap-a", "lldap-b"}, "authelia": {"authelia-a"}, "main": {"directory-x"}}
	both := func(pods ...string) map[string][]world.PodPort {
		out := map[string][]world.PodPort{}
		for _, p := range pods {
			out["p6360-tcp"] = append(out["p6360-tcp"], world.PodPort{Pod: p, Port: 6360})
			out["metrics"] = append(out["metrics"], world.PodPort{Pod: p, Port: 9100})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		behind world.ServiceBackends
		want   string
	}{
		{"exactly the role's", world.ServiceBackends{Ready: []string{"lldap-a", "lldap-b"}, Ports: both("lldap-a", "lldap-b")}, ""},
		{"another role's", world.ServiceBackends{Ready: []string{"authelia-a"}, Ports: map[string][]world.PodPort{"metrics": {{Pod: "authelia-a", Port: 9100}}}},
			"the Service directory-lldap leads to pods authelia-a, not to exactly the ready pods of role lldap (pods lldap-a, lldap-b): extra authelia-a (role authelia); missing lldap-a, lldap-b; its selector role=authelia"},
		{"nothing", world.ServiceBackends{},
			"the Service directory-lldap leads to no pod, not to exactly the ready pods of role lldap (pods lldap-a, lldap-b): missing lldap-a, lldap-b; its selector role=authelia"},
		{"one more, of no role", world.ServiceBackends{Ready: []string{"lldap-a", "lldap-b", "stray"}, Ports: both("lldap-a", "lldap-b", "stray")},
			"extra stray (of no role of the node)"},
		{"a port that reaches another port of a pod", world.ServiceBackends{Ready: []string{"lldap-a", "lldap-b"}, Ports: map[string][]world.PodPort{"p6360-tcp": {{Pod: "lldap-a", Port: 6360}, {Pod: "lldap-b", Port: 3890}}, "metrics": {{Pod: "lldap-a", Port: 9100}, {Pod: "lldap-b", Port: 9100}}}},
			"the Service directory-lldap: its port 6360/TCP (target port p6360-tcp) reaches port 3890 of pod lldap-b, where role lldap serves it on port 6360 as planned"},
		{"a port that misses a pod", world.ServiceBackends{Ready: []string{"lldap-a", "lldap-b"}, Ports: map[string][]world.PodPort{"p6360-tcp": {{Pod: "lldap-a", Port: 6360}}, "metrics": {{Pod: "lldap-a", Port: 9100}, {Pod: "lldap-b", Port: 9100}}}},
			"the Service directory-lldap: its port 6360/TCP (target port p6360-tcp) reaches no port of pods lldap-b of role lldap"},
	} {
		err := compareBackends(svc, c.behind, "lldap", byRole)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
	if err := compareBackends(svc, world.ServiceBackends{}, "lldap", map[string][]string{"lldap": {}}); err == nil || !strings.Contains(err.Error(), "has no ready pod behind it, and role lldap has none ready") {
		t.Errorf("no pod on either side: %v", err)
	}
}

// Each process that runs a service must have every variable the node
// gives its image, with the node's value: one missing, or another value,
// is named with its process.
func TestWrongVariables(t *testing.T) {
	want := map[string]string{"A": "1", "B": "x"}
	envs := map[int]map[string]string{
		1: {"A": "1", "B": "x", "PATH": "/bin"},
		7: {"A": "2"},
	}
	got := strings.Join(wrongVariables(envs, want), "; ")
	if got != `process 7 has A="2", the node gives "1"; process 7 has no B, which the node gives the image ("x")` {
		t.Errorf("got %s", got)
	}
	if w := wrongVariables(map[int]map[string]string{1: {"A": "1", "B": "x"}}, want); len(w) != 0 {
		t.Errorf("as the node gives them: %v", w)
	}
}

// An init is systemd, one of its programs, or init; a service and its
// supervisor are none.
func TestInitsOf(t *testing.T) {
	procs := []world.Process{{PID: 1, Comm: "podroles"}, {PID: 7, Comm: "slapd"}, {PID: 9, Comm: "systemd-journal"}, {PID: 12, Comm: "systemd"}}
	if got := strings.Join(initsOf(procs), ", "); got != "process 9 (systemd-journal), process 12 (systemd)" {
		t.Errorf("got %s", got)
	}
	if got := initsOf(procs[:2]); len(got) != 0 {
		t.Errorf("a service under its supervisor: %v", got)
	}
}

// The service and the companion mount, at /run/secrets, the volume the
// sidecar writes there, read-only as planned.
func TestSecretsShared(t *testing.T) {
	ro := func(name string) []corev1.VolumeMount {
		return []corev1.VolumeMount{{Name: name, MountPath: plan.SecretsDir, ReadOnly: true}}
	}
	deployment := func(companion []corev1.VolumeMount) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "lldap", VolumeMounts: ro("secrets")}, {Name: plan.ContainerCompanion, VolumeMounts: companion}}
		return d
	}
	sidecar := &corev1.Container{Name: plan.ContainerSidecar, VolumeMounts: []corev1.VolumeMount{{Name: "secrets", MountPath: plan.SecretsDir}}}
	want := deployment(ro("secrets"))
	for _, c := range []struct {
		name      string
		companion []corev1.VolumeMount
		wantErr   string
	}{
		{"as planned", ro("secrets"), ""},
		{"no mount", nil, "container companion mounts nothing at /run/secrets"},
		{"another volume", ro("other"), "container companion mounts volume other at /run/secrets, not secrets"},
		{"writable", []corev1.VolumeMount{{Name: "secrets", MountPath: plan.SecretsDir}}, "readOnly false, planned true"},
	} {
		err := secretsShared(want, deployment(c.companion), "lldap", sidecar)
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
		}
	}
}

// The status's counts are the controller's word: a ready pod of an older
// ReplicaSet fails the rollout though they say it is done, and one that
// is not ready is the counts' business.
func TestOnNewestReplicaSet(t *testing.T) {
	d := deploymentWithStatus(1, appsv1.DeploymentStatus{})
	d.UID = "dep"
	controlled := func(kind, name, uid string) []metav1.OwnerReference {
		yes := true
		return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: &yes}}
	}
	rs := func(name, uid, revision string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Annotations: map[string]string{revisionKey: revision}, OwnerReferences: controlled("Deployment", d.Name, "dep")}}
	}
	newest, older := rs("directory-authelia-b", "rs-b", "3"), rs("directory-authelia-a", "rs-a", "2")
	pod := func(name string, of *appsv1.ReplicaSet, ready bool) corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: controlled("ReplicaSet", of.Name, string(of.UID))},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
		}
	}
	if err := onNewestReplicaSet(d, newest, []corev1.Pod{pod("p-new", newest, true), pod("p-old", older, false)}, "authelia"); err != nil {
		t.Errorf("a ready pod of the newest ReplicaSet, an old one not ready: %v", err)
	}
	err := onNewestReplicaSet(d, newest, []corev1.Pod{pod("p-new", newest, true), pod("p-old", older, true)}, "authelia")
	if err == nil || !strings.Contains(err.Error(), "pod p-old (of ReplicaSet directory-authelia-a)") || !strings.Contains(err.Error(), "newest ReplicaSet directory-authelia-b (revision 3)") {
		t.Errorf("a ready pod of an older ReplicaSet: %v", err)
	}
}

// TestImageContents: one image reference runs as one content in every
// pod, replicas and roles alike; IDs of two kinds are not compared.
func TestImageContents(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := func(name, id string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "lldap", Image: "lldap:1"}}, InitContainers: []corev1.Container{{Name: "secrets", Image: "bao:2"}}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "lldap", ImageID: id, State: running}}, InitContainerStatuses: []corev1.ContainerStatus{{Name: "secrets", ImageID: "sha256:b", State: running}}}}
	}
	seen, err := imageContents{}.with([]corev1.Pod{pod("a", "sha256:1"), pod("b", "sha256:1")}, "lldap")
	if err != nil || len(seen) != 2 {
		t.Fatalf("one content: %v, %v", seen, err)
	}
	_, err = imageContents{}.with([]corev1.Pod{pod("a", "sha256:1"), pod("b", "sha256:2")}, "lldap")
	if want := "image lldap:1 runs as two contents: sha256:1 in pod a (role lldap, container lldap), sha256:2 in pod b (role lldap, container lldap): the reference moved between their pulls"; !strings.Contains(errText(err), want) {
		t.Errorf("two replicas:\n got  %v\n want %s", err, want)
	}
	// Another role of the same image, after the first passed.
	if _, err := seen.with([]corev1.Pod{pod("c", "docker-pullable://reg/lldap@sha256:9")}, "worker"); err != nil {
		t.Errorf("a registry's digest beside the runtime's ID: %v", err)
	}
	seen, _ = imageContents{}.with([]corev1.Pod{pod("a", "reg/lldap@sha256:9")}, "lldap")
	if _, err := seen.with([]corev1.Pod{pod("c", "mirror/lldap@sha256:8")}, "worker"); !strings.Contains(errText(err), "(role worker, container lldap)") {
		t.Errorf("another role: got %v", err)
	}
	if _, err := seen.with([]corev1.Pod{pod("c", "mirror/lldap@sha256:9")}, "worker"); err != nil {
		t.Errorf("one digest from a mirror: %v", err)
	}
	// A container not started has no ID yet.
	if _, err := seen.with([]corev1.Pod{pod("c", "")}, "worker"); err != nil {
		t.Errorf("no ID: %v", err)
	}
	// An ended container runs nothing.
	ended := pod("c", "mirror/lldap@sha256:8")
	ended.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}
	if _, err := seen.with([]corev1.Pod{ended}, "worker"); err != nil {
		t.Errorf("ended: %v", err)
	}
	// IDs of each kind are compared among themselves, whatever came first.
	if _, err := seen.with([]corev1.Pod{pod("c", "sha256:1"), pod("d", "sha256:2")}, "worker"); !strings.Contains(errText(err), "sha256:1 in pod c") {
		t.Errorf("two runtime IDs after a registry digest: got %v", err)
	}
}
