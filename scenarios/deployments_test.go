package scenarios

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimPrefix(err.Error(), "saw ")
}
