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
	both := func(pods ...string) map[string][]podPort {
		out := map[string][]podPort{}
		for _, p := range pods {
			out["p6360-tcp"] = append(out["p6360-tcp"], podPort{p, 6360})
			out["metrics"] = append(out["metrics"], podPort{p, 9100})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		behind serviceBackends
		want   string
	}{
		{"exactly the role's", serviceBackends{ready: []string{"lldap-a", "lldap-b"}, ports: both("lldap-a", "lldap-b")}, ""},
		{"another role's", serviceBackends{ready: []string{"authelia-a"}, ports: map[string][]podPort{"metrics": {{"authelia-a", 9100}}}},
			"the Service directory-lldap leads to pods authelia-a, not to exactly the ready pods of role lldap (pods lldap-a, lldap-b): extra authelia-a (role authelia); missing lldap-a, lldap-b; its selector role=authelia"},
		{"nothing", serviceBackends{},
			"the Service directory-lldap leads to no pod, not to exactly the ready pods of role lldap (pods lldap-a, lldap-b): missing lldap-a, lldap-b; its selector role=authelia"},
		{"one more, of no role and no pod", serviceBackends{ready: []string{"address 198.18.9.9", "lldap-a", "lldap-b", "stray"}, ports: both("lldap-a", "lldap-b")},
			"extra address 198.18.9.9 (not a pod), stray (of no role of the node)"},
		{"a port that misses a pod", serviceBackends{ready: []string{"lldap-a", "lldap-b"}, ports: map[string][]podPort{"p6360-tcp": {{"lldap-a", 6360}}, "metrics": {{"lldap-a", 9100}, {"lldap-b", 9100}}}},
			"the Service directory-lldap: its port 6360/TCP (target port p6360-tcp) reaches no port of pods lldap-b of role lldap"},
	} {
		err := compareBackends(svc, c.behind, "lldap", byRole)
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
	if err := compareBackends(svc, serviceBackends{}, "lldap", map[string][]string{"lldap": {}}); err == nil || !strings.Contains(err.Error(), "has no ready pod behind it, and role lldap has none ready") {
		t.Errorf("no pod on either side: %v", err)
	}
}
