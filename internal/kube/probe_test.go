package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A run attaches to the probe of its image that a run before added, while
// it runs; one that ended stays under its name, and the next gets another.
func TestReusableProbe(t *testing.T) {
	spec := ProbeSpec{Image: "podroles:1", Args: []string{"probe", "--idle=0"}}
	first, second := probeName("podroles-probe", spec, 0), probeName("podroles-probe", spec, 1)
	other := probeName("podroles-probe", ProbeSpec{Image: "podroles:2", Args: spec.Args}, 0)
	if first == second || first == other {
		t.Fatalf("names %s, %s, %s", first, second, other)
	}
	pod := func(containers map[string]bool) *corev1.Pod {
		p := &corev1.Pod{}
		for name, ended := range containers {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name}})
			st := corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
			if ended {
				st.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
			}
			p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, st)
		}
		return p
	}
	for _, c := range []struct {
		name       string
		containers map[string]bool
		want       string
		reuse      bool
	}{
		{"none yet", nil, first, false},
		{"one running", map[string]bool{first: false}, first, true},
		{"one of another image", map[string]bool{other: false}, first, false},
		{"one ended", map[string]bool{first: true}, second, false},
		{"one ended, the next running", map[string]bool{first: true, second: false}, second, true},
	} {
		name, reuse := reusableProbe(pod(c.containers), "podroles-probe", spec)
		if name != c.want || reuse != c.reuse {
			t.Errorf("%s: %s %v, want %s %v", c.name, name, reuse, c.want, c.reuse)
		}
	}
}
