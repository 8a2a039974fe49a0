package scenarios_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios"
	"github.com/fediversity/podroles/scenarios/world"
)

func ptr[T any](v T) *T { return &v }

// TestLocateDatabaseOnAControlPlane: a role's database URL is judged
// against the namespace as the API server has it. A Service whose
// endpoints are the node's pods, by each form of its name or by cluster
// IP, is in a pod of the node, named with its role; so is the pod's own
// loopback. A Service without selector whose endpoint is no pod, a
// Service of another namespace and a host out of the cluster are out of
// the pods. A Service that does not exist is named.
func TestLocateDatabaseOnAControlPlane(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node := exampleNode(t, ctx, "directory.nix")
	const ns = "locate"
	_, client := applyPlan(t, ctx, cp, node, ns)
	// A database in the lldap role's pods, behind a Service of its own.
	inPods := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-in-pods"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{names.LabelNode: "directory", names.LabelRole: "lldap"},
		Ports:    []corev1.ServicePort{{Name: "pg", Port: 5432, TargetPort: intstr.FromInt(5432)}},
	}}
	// The platform's database out of the cluster, behind a Service
	// without selector.
	outside := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "postgres"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, TargetPort: intstr.FromInt(15432)}},
	}}
	for _, svc := range []*corev1.Service{inPods, outside} {
		if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	name, port, ready := "pg", int32(15432), true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "postgres-outside", Labels: map[string]string{discoveryv1.LabelServiceName: "postgres"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: names.LabelRole + "=lldap"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("lldap's pods: %v", err)
	}
	lldapPod := pods.Items[0]
	svc, err := client.CoreV1().Services(ns).Get(ctx, inPods.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	inPodsIP := svc.Spec.ClusterIP
	// db-in-pods's endpoint, the pod, as the endpointslice controller
	// writes one. This control plane's KWOK pods have loopback addresses,
	// which no EndpointSlice may hold (the controller writes none): the
	// endpoint has another address and names the pod, as the controller's
	// do. So a host that is a pod's own address is not tried here.
	podSlice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "db-in-pods-pod", Labels: map[string]string{discoveryv1.LabelServiceName: inPods.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"198.19.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: lldapPod.Name}}},
		Ports: []discoveryv1.EndpointPort{{Name: &name, Port: ptr(int32(5432))}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, podSlice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	found, err := world.Discover(ctx, world.DiscoverOptions{Kubeconfig: cp.Kubeconfig, Namespace: ns, Node: node, Dir: t.TempDir(), Direct: true})
	if err != nil {
		t.Fatal(err)
	}
	defer found.Close()
	reader := inventory.Endpoint{Name: lldapPod.Name, Address: lldapPod.Status.PodIP}
	for host, want := range map[string]string{
		"db-in-pods":                          "pod " + lldapPod.Name + " of role lldap",
		"db-in-pods.locate.svc":               "pod " + lldapPod.Name + " of role lldap",
		"db-in-pods.locate.svc.cluster.local": "pod " + lldapPod.Name + " of role lldap",
		inPodsIP:                              "pod " + lldapPod.Name + " of role lldap",
		"127.0.0.1":                           "pod " + lldapPod.Name + " of role lldap",
		"postgres.locate.svc":                 "Service postgres, at 192.0.2.7:15432 out of the namespace's pods",
		"postgres.other.svc.cluster.local":    "a Service of namespace other, where no pod of the node runs",
		"db.example.com":                      "db.example.com:5432, a host out of the cluster",
		"nothing.locate.svc":                  "names Service nothing of namespace locate, which does not exist",
	} {
		pod, role, where, err := scenarios.LocateDatabase(ctx, found, reader, "lldap", "postgres://u:p@"+host+":5432/lldap")
		got := where
		switch {
		case err != nil:
			got = err.Error()
		case pod != "":
			got = "pod " + pod + " of role " + role
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: got %q, want %q", host, got, want)
		}
	}
	// Another namespace's database, reached from outside the cluster as
	// kubectl port-forward svc/ would: an ExternalName Service is its
	// host; a Service with no ready pod behind the port says so.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "databases"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "external"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.org"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "none"}, Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}}},
	} {
		if _, err := client.CoreV1().Services("databases").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for host, want := range map[string]string{
		"external.databases.svc": "db.example.org:5432",
		"nobody.databases.svc":   "Service nobody of namespace databases: the Service nobody has no ready pod behind it",
	} {
		place, err := found.Locate(ctx, reader, "lldap", host, 5432)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		addr, stop, err := place.Reach(ctx)
		got := addr
		if err != nil {
			got = err.Error()
		} else {
			stop()
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s from outside: got %q, want %q", host, got, want)
		}
	}
}
