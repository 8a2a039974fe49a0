package scenarios

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestTargetPort(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "p6360-tcp", ContainerPort: 6360}}}}}}
	pod.Name = "directory-lldap-x"
	cases := []struct {
		port corev1.ServicePort
		want int32
		err  string
	}{
		{corev1.ServicePort{Port: 636, TargetPort: intstr.FromString("p6360-tcp")}, 6360, ""},
		{corev1.ServicePort{Port: 636, TargetPort: intstr.FromInt32(6361)}, 6361, ""},
		{corev1.ServicePort{Port: 636}, 636, ""},
		{corev1.ServicePort{Port: 636, TargetPort: intstr.FromString("ldap")}, 0, `port 636 targets "ldap", which no container of pod directory-lldap-x declares`},
	}
	for _, c := range cases {
		got, err := targetPort(c.port, pod)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %d, %v; want %d, %q", c.port, got, err, c.want, c.err)
		}
	}
}
