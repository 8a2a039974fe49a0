package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
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

// TestPlanDirectory checks, field by field, what node-surface.md's "The
// pods the k8s method makes" fixes for roles that run a service's image.
func TestPlanDirectory(t *testing.T) {
	p, err := Make(example(t, "directory.nix"), Options{ServiceImages: map[string]string{"lldap": "lldap/lldap:v0.6"}})
	if err != nil {
		t.Fatal(err)
	}
	l, a := p.Deployment("directory-lldap"), p.Deployment("directory-authelia")
	if l == nil || a == nil {
		t.Fatalf("deployments: %v", p.Deployments)
	}
	lldap, authelia := l.Spec.Template.Spec, a.Spec.Template.Spec
	sidecarOf := func(spec corev1.PodSpec) corev1.Container {
		if len(spec.InitContainers) != 1 {
			t.Fatalf("init containers %v: want the sidecar alone", containerNames(spec.InitContainers))
		}
		return spec.InitContainers[0]
	}
	sidecar := sidecarOf(lldap)
	mountsOf := func(c corev1.Container) map[string]string {
		out := map[string]string{}
		for _, m := range c.VolumeMounts {
			out[m.MountPath] = fmt.Sprintf("%s ro=%v", m.Name, m.ReadOnly)
		}
		return out
	}
	for _, c := range []struct {
		field string
		ok    bool
		got   any
	}{
		{"replicas (FR-001)", *l.Spec.Replicas == 2 && *a.Spec.Replicas == 1, []int32{*l.Spec.Replicas, *a.Spec.Replicas}},
		{"containers by the contract's names", slices.Equal(containerNames(lldap.Containers), []string{"lldap", ContainerCompanion}) && slices.Equal(containerNames(authelia.Containers), []string{"authelia"}), containerNames(lldap.Containers)},
		{"the service's image as given", lldap.Containers[0].Image == "lldap/lldap:v0.6", lldap.Containers[0].Image},
		{"the companion: the service's image, its program (FR-012)", lldap.Containers[1].Image == "lldap/lldap:v0.6" && slices.Equal(lldap.Containers[1].Command, []string{"/bin/companion"}), lldap.Containers[1]},
		{"the variables with their values (FR-011)", slices.Equal(lldap.Containers[0].Env, []corev1.EnvVar{{Name: "LLDAP_LDAPS_OPTIONS__ENABLED", Value: "true"}, {Name: "LLDAP_LDAPS_OPTIONS__PORT", Value: "6360"}}) && slices.Equal(authelia.Containers[0].Env, []corev1.EnvVar{{Name: "X_AUTHELIA_CONFIG_FILTERS", Value: "template"}}), lldap.Containers[0].Env},
		{"the companion has no variables of the service's", len(lldap.Containers[1].Env) == 0, lldap.Containers[1].Env},
		{"the sidecar is a restartable init container (US1-7)", sidecar.Name == ContainerSidecar && sidecar.RestartPolicy != nil && *sidecar.RestartPolicy == corev1.ContainerRestartPolicyAlways, sidecar},
		{"its startup probe tests every secret file", sidecar.StartupProbe != nil && sidecar.StartupProbe.Exec != nil && slices.Equal(sidecar.StartupProbe.Exec.Command, []string{"/bin/sh", "-c", "test -e '/run/secrets/bind-password' && test -e '/run/secrets/db.env' && test -e '/run/secrets/jwt' && test -e '/run/secrets/key-seed' && test -e '/run/secrets/tls.pem'"}), sidecar.StartupProbe},
		{"no pod mounts the identity itself (US1-7)", lldap.AutomountServiceAccountToken != nil && !*lldap.AutomountServiceAccountToken && authelia.AutomountServiceAccountToken != nil && !*authelia.AutomountServiceAccountToken, lldap.AutomountServiceAccountToken},
		{"the token is the namespace's default account's, named as a projected token needs", lldap.ServiceAccountName == "default", lldap.ServiceAccountName},
		{"the sidecar mounts the projected token and writes /run/secrets", maps.Equal(mountsOf(sidecar), map[string]string{SecretsDir: "secrets ro=false", IdentityDir: "identity ro=true"}), mountsOf(sidecar)},
		{"the service and the companion read /run/secrets, no token", maps.Equal(mountsOf(lldap.Containers[0]), map[string]string{SecretsDir: "secrets ro=true"}) && maps.Equal(mountsOf(lldap.Containers[1]), map[string]string{SecretsDir: "secrets ro=true"}), mountsOf(lldap.Containers[0])},
		{"/run/secrets is in memory", slices.ContainsFunc(lldap.Volumes, func(v corev1.Volume) bool {
			return v.Name == "secrets" && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory
		}), lldap.Volumes},
		{"the identity is a projected service-account token", slices.ContainsFunc(lldap.Volumes, func(v corev1.Volume) bool {
			return v.Name == "identity" && v.Projected != nil && v.Projected.Sources[0].ServiceAccountToken != nil
		}), lldap.Volumes},
		{"placeholders named with their flags", maps.Equal(p.Placeholders, map[string]string{"directory:latest": "--node-image directory=IMAGE", "authelia:latest": "--service-image authelia=IMAGE", "openbao/openbao:latest": "--sidecar-image"}), p.Placeholders},
	} {
		if !c.ok {
			t.Errorf("%s: got %+v", c.field, c.got)
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
}

// TestPlanRefusesVariablesWithoutValues: facts of an older podroles name a
// service's variables but not their values; planning them would set each
// to the empty string over the image's own value.
func TestPlanRefusesVariablesWithoutValues(t *testing.T) {
	n := example(t, "directory.nix")
	svc := n.PodRoles.Services["lldap"]
	svc.Variables = nil
	n.PodRoles.Services["lldap"] = svc
	if _, err := Make(n, Options{}); err == nil || !strings.Contains(err.Error(), "variables of service lldap but not their values") {
		t.Fatalf("err = %v", err)
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
	if strings.Count(y.String(), "\n---\n") != 2 || !strings.Contains(y.String(), "name: mastodon-sidekiq") || !strings.HasPrefix(y.String(), "# podroles plan of node mastodon\n# mastodon:latest is a placeholder image: give the real one with --node-image mastodon=IMAGE\n") {
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
