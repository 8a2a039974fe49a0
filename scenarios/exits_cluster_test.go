package scenarios_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/scenarios/world"
)

// TestHistoriesOnAControlPlane: one list of the namespace's pods gives
// each pod's history as the API server holds its status; a pod that is
// gone, or that is being deleted, is named as replaced. One list of the
// namespace's events gives the kubelet's stops of each pod's container.
func TestHistoriesOnAControlPlane(t *testing.T) {
	t.Parallel()
	cp := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kc, err := kube.Connect(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "histories"
	client := kc.Clientset
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods bound to a node that no kubelet runs: only this test writes
	// their status.
	uids := map[string]string{}
	makePod := func(name string, finalizers []string, status corev1.ContainerStatus) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}, Spec: corev1.PodSpec{
			NodeName:   "no-kubelet",
			Containers: []corev1.Container{{Name: "authelia", Image: "authelia"}},
		}}
		got, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = string(got.UID)
		got.Status.Phase = corev1.PodRunning
		got.Status.ContainerStatuses = []corev1.ContainerStatus{status}
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	finished := metav1.NewTime(time.Date(2026, 12, 7, 11, 40, 0, 0, time.UTC))
	killed := corev1.ContainerStatus{Name: "authelia", RestartCount: 2, Ready: true,
		State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(finished.Add(time.Second))}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", FinishedAt: finished}}}
	makePod("runs", nil, killed)
	makePod("deleting", []string{"podroles.test/held"}, killed)
	t.Cleanup(func() {
		ctx := context.Background()
		if p, err := client.CoreV1().Pods(ns).Get(ctx, "deleting", metav1.GetOptions{}); err == nil {
			p.Finalizers = nil
			client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		}
		client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	if err := client.CoreV1().Pods(ns).Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c := &world.Cluster{Client: kc, Namespace: ns}
	at := func(name string) inventory.Endpoint {
		return inventory.Endpoint{Name: name, Container: "authelia", UID: uids[name]}
	}

	got, err := world.Histories(ctx, c, []inventory.Endpoint{at("runs")}, world.Service)
	if err != nil {
		t.Fatal(err)
	}
	st := got["runs"]
	if st == nil || st.RestartCount != 2 || !st.Running || st.LastExit == nil || st.LastExit.Reason != "OOMKilled" || !st.LastExit.FinishedAt.Equal(finished.Time) {
		t.Errorf("pod runs: got %+v, want 2 restarts, running, the last exit OOMKilled at %s", st, finished)
	}
	for pod, want := range map[string]string{
		"deleting": "pod histories/deleting is being deleted (since ",
		"gone":     "pod histories/gone is gone: it was replaced by a new pod",
	} {
		_, err := world.Histories(ctx, c, []inventory.Endpoint{at("runs"), at(pod)}, world.Service)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("with pod %s: got %v, want an error with %q", pod, err, want)
		}
	}

	// The kubelet's stops: of the service's container of the pod, kept;
	// of its companion, of a pod of the same name before, and another
	// reason, not.
	stop := func(name, pod, uid, container, reason, message string) {
		t.Helper()
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, UID: types.UID(uid), FieldPath: "spec.containers{" + container + "}"},
			Reason:         reason, Message: message, Type: corev1.EventTypeNormal, Count: 3,
			FirstTimestamp: finished, LastTimestamp: metav1.NewTime(finished.Add(time.Minute)), Source: corev1.EventSource{Component: "kubelet"}}
		if _, err := client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	stop("liveness", "runs", uids["runs"], "authelia", "Killing", "Container authelia failed liveness probe, will be restarted")
	stop("companion", "runs", uids["runs"], "companion", "Killing", "Container companion failed liveness probe, will be restarted")
	stop("before", "runs", "another-uid", "authelia", "Killing", "Container authelia failed startup probe, will be restarted")
	stop("unhealthy", "runs", uids["runs"], "authelia", "Unhealthy", "Liveness probe failed")
	stops, err := world.KubeletStops(ctx, c, []inventory.Endpoint{at("runs")}, world.Service)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Container authelia failed liveness probe, will be restarted (event Killing at 11:41:00, 3 times)"}
	if !slices.Equal(stops["runs"], want) || len(stops) != 1 {
		t.Errorf("the kubelet's stops: got %q, want pod runs with %q", stops, want)
	}
}
