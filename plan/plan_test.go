package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
)

func example(t *testing.T, name string) *facts.Node {
	t.Helper()
	s, err := nixeval.FileSource("../examples/" + name)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := (&nixeval.Evaluator{Nix: nixtest.Nix(t)}).Extract(context.Background(), []nixeval.Source{s})
	if err != nil {
		t.Fatal(err)
	}
	return nodes[0]
}

func containerNames(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func TestPlanMastodon(t *testing.T) {
	p, err := Make(example(t, "mastodon.nix"), Options{Namespace: "social"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deployments) != 2 || len(p.Services) != 1 {
		t.Fatalf("%d deployments, %d services", len(p.Deployments), len(p.Services))
	}
	sk := p.Deployment("mastodon-sidekiq")
	if sk == nil || *sk.Spec.Replicas != 2 || sk.Spec.Template.Spec.Containers[0].Image != "mastodon:latest" || sk.Namespace != "social" {
		t.Fatalf("mastodon-sidekiq = %+v", sk)
	}
	if units := sk.Spec.Template.Annotations[AnnotationUnits]; units != "mastodon-sidekiq-all,prometheus-node-exporter" {
		t.Errorf("sidekiq units = %s", units)
	}
	main := p.Deployment("mastodon")
	if units := main.Spec.Template.Annotations[AnnotationUnits]; !strings.Contains(units, "mastodon-web") || strings.Contains(units, "mastodon-sidekiq-all") {
		t.Errorf("main units = %s", units)
	}
	if svc := p.Services[0]; svc.Name != "mastodon-sidekiq" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9394 || svc.Annotations["prometheus.io/path"] != "/metrics" {
		t.Errorf("service = %+v", svc)
	}
}

func TestPlanDirectory(t *testing.T) {
	p, err := Make(example(t, "directory.nix"), Options{ServiceImages: map[string]string{"lldap": "lldap/lldap:v0.6"}})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Deployment("directory-lldap")
	if l == nil || *l.Spec.Replicas != 2 {
		t.Fatalf("directory-lldap = %+v", l)
	}
	spec := l.Spec.Template.Spec
	if got := containerNames(spec.Containers); !slices.Equal(got, []string{"lldap", ContainerCompanion, ContainerSidecar}) {
		t.Errorf("containers = %v", got)
	}
	if spec.Containers[0].Image != "lldap/lldap:v0.6" || spec.Containers[1].Command[0] != "/bin/companion" {
		t.Errorf("images and companion: %+v", spec.Containers[:2])
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("a pod with secrets must not mount the pod's identity (US1-7)")
	}
	for _, c := range spec.Containers {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/run/secrets" || c.VolumeMounts[0].ReadOnly == (c.Name == ContainerSidecar) {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
	}
	var ports []int32
	for _, s := range p.Services {
		if s.Name == "directory-lldap" {
			for _, sp := range s.Spec.Ports {
				ports = append(ports, sp.Port)
			}
		}
	}
	if !slices.Equal(ports, []int32{6360, 17170}) {
		t.Errorf("directory-lldap Service ports = %v: exactly the role's, without plain LDAP", ports)
	}
	if a := p.Deployment("directory-authelia"); a == nil || *a.Spec.Replicas != 1 || !slices.Equal(containerNames(a.Spec.Template.Spec.Containers), []string{"authelia", ContainerSidecar}) {
		t.Errorf("directory-authelia = %+v", a)
	}
}

func TestPlanRefusesNodeOffK8s(t *testing.T) {
	if _, err := Make(example(t, "mastodon-vm.nix"), Options{}); err == nil || !strings.Contains(err.Error(), "not on k8s-pod.nix") {
		t.Fatalf("err = %v", err)
	}
}

func TestWrite(t *testing.T) {
	p, _ := Make(example(t, "mastodon.nix"), Options{})
	var y, j bytes.Buffer
	if err := Write(&y, "yaml", []*Plan{p}); err != nil {
		t.Fatal(err)
	}
	if strings.Count(y.String(), "\n---\n") != 2 || !strings.Contains(y.String(), "name: mastodon-sidekiq") {
		t.Errorf("yaml:\n%s", y.String())
	}
	if err := Write(&j, "json", []*Plan{p}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []map[string]any
	}
	if err := json.Unmarshal(j.Bytes(), &list); err != nil || list.Kind != "List" || len(list.Items) != 3 {
		t.Errorf("json: %v %+v", err, list)
	}
}
