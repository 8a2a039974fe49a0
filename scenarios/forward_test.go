package scenarios

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestReadyBackends reads EndpointSlices as the endpointslice controller
// writes them: a slice per set of resolved ports (a pod that does not
// declare a named target port is in a slice without that port), one per
// address family, readiness unset or false, and an endpoint that is no
// pod.
func TestReadyBackends(t *testing.T) {
	ready, notReady := true, false
	pod := func(name string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"198.18.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: name}}
	}
	port := func(name string, n int32) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: &name, Port: &n}
	}
	all := []discoveryv1.EndpointSlice{
		{
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{port("p6360-tcp", 6360), port("metrics", 9100)},
			Endpoints:   []discoveryv1.Endpoint{pod("lldap-b", &ready), pod("lldap-a", nil), pod("lldap-old", &notReady)},
		},
		{
			AddressType: discoveryv1.AddressTypeIPv6,
			Ports:       []discoveryv1.EndpointPort{port("p6360-tcp", 6360), port("metrics", 9100)},
			Endpoints:   []discoveryv1.Endpoint{pod("lldap-b", &ready)},
		},
		{
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{port("metrics", 9959)},
			Endpoints:   []discoveryv1.Endpoint{pod("authelia-a", &ready), {Addresses: []string{"198.18.9.9"}}},
		},
	}
	got := readyBackends(all)
	want := serviceBackends{
		ready: []string{"address 198.18.9.9", "authelia-a", "lldap-a", "lldap-b"},
		ports: map[string][]podPort{
			"p6360-tcp": {{"lldap-a", 6360}, {"lldap-b", 6360}},
			"metrics":   {{"authelia-a", 9959}, {"lldap-a", 9100}, {"lldap-b", 9100}},
		},
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
		behind serviceBackends
		want   string
	}{
		{serviceBackends{}, "the Service directory-lldap has no ready pod behind it (its EndpointSlices list none; its selector node=directory,role=lldap)"},
		{serviceBackends{ready: []string{"authelia-a", "authelia-b"}}, "the Service directory-lldap leads to pods authelia-a, authelia-b, which serve none of its ports 6360 (target port p6360-tcp) (its selector node=directory,role=lldap)"},
	} {
		if got := c.behind.noPodBehind(svc, []string{"6360"}); got != c.want {
			t.Errorf("noPodBehind(%v):\n got %s\nwant %s", c.behind.ready, got, c.want)
		}
	}
	svc.Spec.Selector = nil
	if got, want := (serviceBackends{}).noPodBehind(svc, []string{"6360", "9100"}), "(its EndpointSlices list none; it has no selector)"; !strings.Contains(got, want) {
		t.Errorf("no selector: %s; want %q", got, want)
	}
}
