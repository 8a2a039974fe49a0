// Package plan says, from a node's facts, which Kubernetes objects the k8s
// method must make of it: the Deployment of the main pod, a Deployment and
// a Service for each requested role, the containers of each pod and the
// units each pod may run. It is the expectation that the cluster suites
// compare a cluster against; it makes no call to a cluster.
package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels and annotations the plan puts on what it makes.
const (
	LabelNode = "podroles.fediversity.eu/node"
	LabelRole = "podroles.fediversity.eu/role"
	// AnnotationUnits lists, on a pod template, the units that its pods
	// may run (k8s FR-004b: the node runs in each pod only those).
	AnnotationUnits = "podroles.fediversity.eu/units"
	// MainRole is the role label of the main pod.
	MainRole = "main"
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
	// NodeImage is the image of the node; "<node>:latest" when empty.
	NodeImage string
	// ServiceImages maps a modular service to its image;
	// "<service>:latest" when absent.
	ServiceImages map[string]string
	// SidecarImage is the OpenBao agent's image.
	SidecarImage string
}

// Plan is the objects of one node.
type Plan struct {
	Node        string
	Deployments []*appsv1.Deployment
	Services    []*corev1.Service
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

// Make plans the objects of a node on the k8s method. Only requested roles
// get a Deployment; the main pod always does.
func Make(n *facts.Node, o Options) (*Plan, error) {
	if !n.K8sPod.Enable {
		return nil, fmt.Errorf("node %s is not on k8s-pod.nix (fediversity.k8sPod.enable is false): the k8s method makes nothing of it", n.Name)
	}
	nodeImage := o.NodeImage
	if nodeImage == "" {
		nodeImage = n.Name + ":latest"
	}
	sidecarImage := o.SidecarImage
	if sidecarImage == "" {
		sidecarImage = "openbao/openbao:latest"
	}
	p := &Plan{Node: n.Name}

	mainUnits := facts.UniqueNames(append(slices.Clone(n.PodRoles.MainUnits), n.PodRoles.SharedUnits...))
	main := deployment(n.Name, n.Name, MainRole, o.Namespace, 1, mainUnits, []corev1.Container{{Name: ContainerNode, Image: nodeImage}})
	p.Deployments = append(p.Deployments, main)

	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if !role.Requested() {
			continue
		}
		name := n.Name + "-" + r
		var containers []corev1.Container
		var units []string
		if role.RunsNodeImage() {
			containers = []corev1.Container{{Name: ContainerNode, Image: nodeImage}}
			units = facts.UniqueNames(append(slices.Clone(role.Units), n.PodRoles.SharedUnits...))
		} else {
			service := *role.Service
			image := o.ServiceImages[service]
			if image == "" {
				image = service + ":latest"
			}
			containers = []corev1.Container{{Name: service, Image: image}}
			if role.Companion {
				program := "/bin/companion"
				if c := n.PodRoles.Services[service].Companion; c != nil {
					program = *c
				}
				containers = append(containers, corev1.Container{Name: ContainerCompanion, Image: image, Command: []string{program}})
			}
			if len(role.Secrets) > 0 {
				containers = append(containers, corev1.Container{Name: ContainerSidecar, Image: sidecarImage})
			}
			for _, v := range n.PodRoles.Services[service].Environment {
				containers[0].Env = append(containers[0].Env, corev1.EnvVar{Name: v})
			}
		}
		// The service's container serves the role's ports; the companion
		// and the sidecar share its network but declare none.
		containers[0].Ports = containerPorts(role)
		d := deployment(name, n.Name, r, o.Namespace, int32(*role.Replicas), units, containers)
		if len(role.Secrets) > 0 {
			addSecretsVolume(d)
		}
		p.Deployments = append(p.Deployments, d)
		if svc := service(name, n.Name, r, o.Namespace, role); svc != nil {
			p.Services = append(p.Services, svc)
		}
	}
	return p, nil
}

func deployment(name, node, role, namespace string, replicas int32, units []string, containers []corev1.Container) *appsv1.Deployment {
	labels := map[string]string{LabelNode: node, LabelRole: role}
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

// addSecretsVolume gives every container of the pod /run/secrets, which
// the sidecar writes and the others read.
func addSecretsVolume(d *appsv1.Deployment) {
	spec := &d.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "secrets", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
	// US1-7: the service cannot read the pod's identity.
	no := false
	spec.AutomountServiceAccountToken = &no
	for i := range spec.Containers {
		spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, corev1.VolumeMount{Name: "secrets", MountPath: "/run/secrets", ReadOnly: spec.Containers[i].Name != ContainerSidecar})
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

// service is the role's Service with exactly its ports and metrics port,
// or nil for a role with none.
func service(name, node, role, namespace string, r facts.Role) *corev1.Service {
	ports := containerPorts(r)
	if len(ports) == 0 {
		return nil
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{LabelNode: node, LabelRole: role}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{LabelNode: node, LabelRole: role}},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Port: p.ContainerPort, Protocol: p.Protocol, TargetPort: intstr.FromString(p.Name)})
	}
	if m := r.Metrics; m != nil {
		svc.Annotations = map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": strconv.Itoa(m.Port), "prometheus.io/path": m.Path}
	}
	return svc
}
