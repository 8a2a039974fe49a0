// Package plan says, from a node's facts, which Kubernetes objects the
// k8s method must make of it. It gives the Deployment of the main pod, a
// Deployment and a Service for each requested role, the containers of
// each pod and the units each pod may run. It is the expectation that
// the cluster suites compare a cluster against; it makes no call to a
// cluster.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/plan/names"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The annotation the plan puts on pod templates (names has the labels).
const (
	// AnnotationUnits lists, on a pod template, the units that its pods
	// may run (k8s FR-004b: the node runs in each pod only those).
	AnnotationUnits = "podroles.fediversity.eu/units"
)

// Container names.
const (
	ContainerNode      = "node"
	ContainerCompanion = "companion"
	ContainerSidecar   = "secrets"
)

// Options say where images come from.
type Options struct {
	// Namespace of the objects.
	Namespace string
	// NodeImage is the image of the node; a placeholder, "<node>:latest",
	// when empty.
	NodeImage string
	// ServiceImages maps a modular service to its image; a placeholder,
	// "<service>:latest", when absent.
	ServiceImages map[string]string
	// SidecarImage is the OpenBao agent's image; a placeholder when empty.
	SidecarImage string
}

// Where the pods of a role with a service find what the sidecar gives them.
const (
	// SecretsDir is the in-memory volume the sidecar writes the role's
	// secrets into (node-surface: "/run/secrets").
	SecretsDir = "/run/secrets"
	// IdentityDir is where the sidecar finds the pod's service-account
	// token, as the OpenBao agent's kubernetes auth method reads it by
	// default. Only the sidecar mounts it (US1-7).
	IdentityDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// identityVolume and secretsVolume name the volumes.
	identityVolume = "identity"
	secretsVolume  = "secrets"
)

// Plan is the objects of one node.
type Plan struct {
	Node        string
	Deployments []*appsv1.Deployment
	Services    []*corev1.Service
	// Placeholders are the image references the plan made up because
	// Options gave none, with the flag that gives a real one. Nothing may
	// compare them with a cluster's images (node-surface: image references
	// are the method's).
	Placeholders map[string]string
}

// Objects returns every object, Deployments first, in name order.
func (p *Plan) Objects() []any {
	var out []any
	for _, d := range p.Deployments {
		out = append(out, d)
	}
	for _, s := range p.Services {
		out = append(out, s)
	}
	return out
}

// Deployment returns the planned Deployment named name, or nil.
func (p *Plan) Deployment(name string) *appsv1.Deployment {
	for _, d := range p.Deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// image returns given, or a placeholder that the plan records with the
// flag that would have given a real reference.
func (p *Plan) image(given, placeholder, flag string) string {
	if given != "" {
		return given
	}
	p.Placeholders[placeholder] = flag
	return placeholder
}

// Make plans the objects of a node on the k8s method. Only requested roles
// get a Deployment; the main pod always does.
func Make(n *facts.Node, o Options) (*Plan, error) {
	if !n.K8sPod.Enable {
		return nil, fmt.Errorf("node %s is not on k8s-pod.nix (fediversity.k8sPod.enable is false): the k8s method makes nothing of it", n.Name)
	}
	p := &Plan{Node: n.Name, Placeholders: map[string]string{}}
	nodeImage := p.image(o.NodeImage, n.Name+":latest", "--node-image "+n.Name+"=IMAGE")

	mainUnits := facts.UniqueNames(append(slices.Clone(n.PodRoles.MainUnits), n.PodRoles.SharedUnits...))
	main := deployment(names.MainName(n.Name), names.Labels(n.Name, names.MainRole), o.Namespace, 1, mainUnits, []corev1.Container{{Name: ContainerNode, Image: nodeImage}})
	p.Deployments = append(p.Deployments, main)

	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if !role.Requested() {
			continue
		}
		if role.RunsNodeImage() {
			units := facts.UniqueNames(append(slices.Clone(role.Units), n.PodRoles.SharedUnits...))
			node := corev1.Container{Name: ContainerNode, Image: nodeImage, Ports: containerPorts(role)}
			p.Deployments = append(p.Deployments, deployment(names.RoleName(n.Name, r), names.Labels(n.Name, r), o.Namespace, int32(*role.Replicas), units, []corev1.Container{node}))
		} else {
			d, err := p.serviceDeployment(n, r, role, o)
			if err != nil {
				return nil, err
			}
			p.Deployments = append(p.Deployments, d)
		}
		if names.HasService(role) {
			p.Services = append(p.Services, service(n.Name, r, o.Namespace, role))
		}
	}
	return p, nil
}

// serviceDeployment is the Deployment of a role that runs the image of a
// modular service: the service's container with its variables (FR-011),
// the companion (FR-012), and for a role with secrets the OpenBao agent as
// a sidecar that starts first and is ready once every secret is a file,
// alone holding the pod's identity (US1-7).
func (p *Plan) serviceDeployment(n *facts.Node, r string, role facts.Role, o Options) (*appsv1.Deployment, error) {
	service := *role.Service
	settings := n.PodRoles.Services[service]
	if len(settings.Environment) > 0 && settings.Variables == nil {
		return nil, fmt.Errorf("node %s: the facts name the variables of service %s but not their values (facts written by an older podroles): write them again with podroles facts", n.Name, service)
	}
	image := p.image(o.ServiceImages[service], service+":latest", "--service-image "+service+"=IMAGE")
	main := corev1.Container{Name: service, Image: image, Ports: containerPorts(role)}
	for _, v := range slices.Sorted(maps.Keys(settings.Variables)) {
		main.Env = append(main.Env, corev1.EnvVar{Name: v, Value: settings.Variables[v]})
	}
	containers := []corev1.Container{main}
	if role.Companion {
		program := "/bin/companion"
		if settings.Companion != nil {
			program = *settings.Companion
		}
		containers = append(containers, corev1.Container{Name: ContainerCompanion, Image: image, Command: []string{program}})
	}
	d := deployment(names.RoleName(n.Name, r), names.Labels(n.Name, r), o.Namespace, int32(*role.Replicas), nil, containers)
	spec := &d.Spec.Template.Spec
	// The service never needs the pod's identity; only the sidecar does.
	no := false
	spec.AutomountServiceAccountToken = &no
	// A projected token needs the account named: the namespace's default
	// account, which the ServiceAccount admission plugin would set. Giving
	// a role an account of its own is the method's choice.
	spec.ServiceAccountName = "default"
	if len(role.Secrets) == 0 {
		return d, nil
	}
	files := slices.Sorted(maps.Keys(role.Secrets))
	sidecar := corev1.Container{
		Name:  ContainerSidecar,
		Image: p.image(o.SidecarImage, "openbao/openbao:latest", "--sidecar-image"),
		// A restartable init container: Kubernetes starts it before the
		// others and starts them once its startup probe passes.
		RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		StartupProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", secretsExist(files)}}},
			PeriodSeconds:    1,
			FailureThreshold: 300,
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: secretsVolume, MountPath: SecretsDir},
			{Name: identityVolume, MountPath: IdentityDir, ReadOnly: true},
		},
	}
	spec.InitContainers = append(spec.InitContainers, sidecar)
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: secretsVolume, MountPath: SecretsDir, ReadOnly: true})
	}
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: secretsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		corev1.Volume{Name: identityVolume, VolumeSource: corev1.VolumeSource{Projected: identity()}},
	)
	return d, nil
}

// secretsExist is the sidecar's startup probe: true once every file of the
// role's secrets exists.
func secretsExist(files []string) string {
	var tests []string
	for _, f := range files {
		tests = append(tests, "test -e "+shellQuote(SecretsDir+"/"+f))
	}
	return strings.Join(tests, " && ")
}

// shellQuote quotes s for sh. PR302 keeps secrets' names to file names, but
// a quote costs nothing and a name is the node's.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// identity is the projected volume that Kubernetes mounts as a pod's
// service-account token when it mounts one itself: the token, the
// cluster's CA and the namespace.
func identity() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}},
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	}}
}

func ptr[T any](v T) *T { return &v }

func deployment(name string, labels map[string]string, namespace string, replicas int32, units []string, containers []corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationUnits: strings.Join(units, ",")}},
				Spec:       corev1.PodSpec{Containers: containers},
			},
		},
	}
}

// PortName names a port of a role in its Service and containers.
func PortName(p facts.Port) string {
	return fmt.Sprintf("p%d-%s", p.Port, strings.ToLower(p.Protocol))
}

func containerPorts(role facts.Role) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range role.Ports {
		out = append(out, corev1.ContainerPort{Name: PortName(p), ContainerPort: int32(p.Port), Protocol: corev1.Protocol(p.Protocol)})
	}
	if m := role.Metrics; m != nil && !slices.ContainsFunc(role.Ports, func(p facts.Port) bool { return p.Port == m.Port && p.Protocol == facts.ProtocolTCP }) {
		out = append(out, corev1.ContainerPort{Name: "metrics", ContainerPort: int32(m.Port), Protocol: corev1.ProtocolTCP})
	}
	return out
}

// service is the Service of role of node, with exactly the role's ports
// and metrics port; HasService says whether it has any.
func service(node, role, namespace string, r facts.Role) *corev1.Service {
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: names.RoleName(node, role), Namespace: namespace, Labels: names.Labels(node, role)},
		Spec:       corev1.ServiceSpec{Selector: names.Labels(node, role)},
	}
	for _, p := range containerPorts(r) {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, Protocol: p.Protocol, TargetPort: intstr.FromString(p.Name)})
	}
	if m := r.Metrics; m != nil {
		svc.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(m.Port), "prometheus.io/path": m.Path}
	}
	return svc
}
