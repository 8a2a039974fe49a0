package world

import (
	"cmp"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestReadyBackends: the pods behind a Service are the ready ones its
// selector selected, each behind the ports whose target it declares (by
// number, or by the name of a container port of the same protocol).
func TestReadyBackends(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "ldaps", Port: 636, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("p6360-tcp")},
		{Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(9101)},
		{Name: "web", Port: 17170, Protocol: corev1.ProtocolTCP},
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("p53")},
	}}}
	ip := map[string]string{"lldap-a": "198.18.0.5", "lldap-b": "198.18.0.6", "authelia-a": "198.18.0.9"}
	pod := func(name string, phase corev1.PodPhase, ready corev1.ConditionStatus, ports ...corev1.ContainerPort) corev1.Pod {
		p := corev1.Pod{
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "lldap", Ports: ports}}},
			Status: corev1.PodStatus{Phase: phase, PodIP: cmp.Or(ip[name], "198.18.0.99"), Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
		p.Name = name
		return p
	}
	ldaps := corev1.ContainerPort{Name: "p6360-tcp", ContainerPort: 6360, Protocol: corev1.ProtocolTCP}
	dnsTCP := corev1.ContainerPort{Name: "p53", ContainerPort: 53, Protocol: corev1.ProtocolTCP}
	deleted := pod("lldap-old", corev1.PodRunning, corev1.ConditionTrue, ldaps)
	deleted.DeletionTimestamp = &metav1.Time{}
	selected := []corev1.Pod{
		pod("lldap-b", corev1.PodRunning, corev1.ConditionTrue, ldaps),
		pod("lldap-a", corev1.PodRunning, corev1.ConditionTrue, ldaps, dnsTCP),
		pod("lldap-starting", corev1.PodRunning, corev1.ConditionFalse, ldaps),
		pod("lldap-pending", corev1.PodPending, corev1.ConditionFalse, ldaps),
		deleted,
		pod("authelia-a", corev1.PodRunning, corev1.ConditionTrue),
	}
	got := readyBackends(svc, selected)
	want := ServiceBackends{
		Ready: []string{"authelia-a", "lldap-a", "lldap-b"},
		Ports: map[string][]PodPort{
			"ldaps":   {{"lldap-a", 6360}, {"lldap-b", 6360}},
			"metrics": {{"authelia-a", 9101}, {"lldap-a", 9101}, {"lldap-b", 9101}},
			"web":     {{"authelia-a", 17170}, {"lldap-a", 17170}, {"lldap-b", 17170}},
		},
		// The ready pods' addresses only.
		IPs: map[string]string{"198.18.0.5": "lldap-a", "198.18.0.6": "lldap-b", "198.18.0.9": "authelia-a"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readyBackends:\n got %+v\nwant %+v", got, want)
	}
}

// TestNoPodBehind: why a Service's ports reach no pod names the Service,
// its selector, and the pods it leads to that serve none of them.
func TestNoPodBehind(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{
		Selector: map[string]string{"role": "lldap", "node": "directory"},
		Ports:    []corev1.ServicePort{{Name: "p6360-tcp", Port: 6360, TargetPort: intstr.FromString("p6360-tcp")}, {Name: "metrics", Port: 9100, TargetPort: intstr.FromInt32(9100)}},
	}}
	svc.Name = "directory-lldap"
	for _, c := range []struct {
		behind ServiceBackends
		want   string
	}{
		{ServiceBackends{}, "the Service directory-lldap has no ready pod behind it (its selector node=directory,role=lldap)"},
		{ServiceBackends{Ready: []string{"authelia-a", "authelia-b"}}, "the Service directory-lldap leads to pods authelia-a, authelia-b, which serve none of its ports 6360 (target port p6360-tcp) (its selector node=directory,role=lldap)"},
	} {
		if got := c.behind.NoPodBehind(svc, []string{"6360"}); got != c.want {
			t.Errorf("noPodBehind(%v):\n got %s\nwant %s", c.behind.Ready, got, c.want)
		}
	}
	svc.Spec.Selector = nil
	if got, want := (ServiceBackends{}).NoPodBehind(svc, []string{"6360", "9100"}), "has no ready pod behind it (it has no selector)"; !strings.Contains(got, want) {
		t.Errorf("no selector: %s; want %q", got, want)
	}
}
