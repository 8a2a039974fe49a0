package scenarios

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fediversity/podroles/facts"
)

// RunnerName names the objects of a runner's manifest: its
// ServiceAccount, Role, RoleBinding, ConfigMap and Job.
const RunnerName = "podroles-scenarios"

// The paths of the runner's Job.
const (
	// RunnerConfigDir holds the ConfigMap's files: facts.json and, with
	// a base, inventory.yaml.
	RunnerConfigDir = "/etc/podroles"
	// RunnerReportDir holds the report, report.json.
	RunnerReportDir = "/report"
)

// ManifestOptions say what a runner's manifest runs, and where.
type ManifestOptions struct {
	Namespace string
	Node      *facts.Node
	// Image is the runner's image; its entrypoint is podroles.
	Image string
	// Suites are the selected suites (all when nil), as Select gives
	// them; Run, when set, keeps the scenarios whose "suite/scenario"
	// it matches; Disruptive lets the disruptive ones run. They select
	// as scenarios run's --suite, --run and --disruptive do.
	Suites     []*Suite
	Run        *regexp.Regexp
	Disruptive bool
	// Base is an inventory base, as its file holds it (none when empty).
	Base []byte
	// ReportClaim, when set, is a PersistentVolumeClaim that keeps the
	// report file; otherwise it is in an emptyDir, gone with the pod.
	ReportClaim string
	// Outside makes the access of a runner outside the cluster
	// (scenarios run --kubeconfig with the ServiceAccount's token): the
	// Role grants the port-forwards too, and there is no Job.
	Outside bool
	// FromRunner: the runner connects from its own pod, and adds no
	// probe to the main pod (scenarios run --from-runner). Otherwise the
	// Job's runner adds its own image as the probe.
	FromRunner bool
}

// Manifest is what a platform applies to run the suites in the node's
// namespace: a ServiceAccount with a Role that grants exactly what the
// selected scenarios use, and the Job that runs them.
type Manifest struct {
	ServiceAccount *corev1.ServiceAccount
	Role           *rbacv1.Role
	RoleBinding    *rbacv1.RoleBinding
	// ConfigMap and Job are nil for a runner outside the cluster.
	ConfigMap *corev1.ConfigMap
	Job       *batchv1.Job
	// Grants are the Role's permissions, with who needs each.
	Grants []Grant
}

// MakeManifest makes the manifest of a runner.
func MakeManifest(o ManifestOptions) (*Manifest, error) {
	suites := o.Suites
	if suites == nil {
		suites = Suites()
	}
	m := &Manifest{Grants: Access(suites, AccessOptions{Run: o.Run, Disruptive: o.Disruptive, InCluster: !o.Outside, FromRunner: o.FromRunner})}
	meta := func(kind, version string) (metav1.TypeMeta, metav1.ObjectMeta) {
		return metav1.TypeMeta{APIVersion: version, Kind: kind}, metav1.ObjectMeta{Name: RunnerName, Namespace: o.Namespace, Labels: map[string]string{"app.kubernetes.io/name": RunnerName}}
	}
	m.ServiceAccount = &corev1.ServiceAccount{}
	m.ServiceAccount.TypeMeta, m.ServiceAccount.ObjectMeta = meta("ServiceAccount", "v1")
	m.Role = &rbacv1.Role{Rules: Rules(m.Grants)}
	m.Role.TypeMeta, m.Role.ObjectMeta = meta("Role", "rbac.authorization.k8s.io/v1")
	m.RoleBinding = &rbacv1.RoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RunnerName},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: RunnerName, Namespace: o.Namespace}},
	}
	m.RoleBinding.TypeMeta, m.RoleBinding.ObjectMeta = meta("RoleBinding", "rbac.authorization.k8s.io/v1")
	if o.Outside {
		return m, nil
	}
	data, err := facts.Marshal(&facts.Document{Version: facts.FactsVersion, Nodes: []*facts.Node{o.Node}})
	if err != nil {
		return nil, err
	}
	m.ConfigMap = &corev1.ConfigMap{Data: map[string]string{"facts.json": string(data)}}
	m.ConfigMap.TypeMeta, m.ConfigMap.ObjectMeta = meta("ConfigMap", "v1")
	if len(o.Base) > 0 {
		m.ConfigMap.Data["inventory.yaml"] = string(o.Base)
	}
	m.Job = &batchv1.Job{}
	m.Job.TypeMeta, m.Job.ObjectMeta = meta("Job", "batch/v1")
	// The runner's own image is the probe of the main pod, when a
	// selected scenario adds one.
	probes := slices.ContainsFunc(m.Grants, func(g Grant) bool { return g.Permission == addContainers })
	m.Job.Spec = runnerJobSpec(o, probes)
	return m, nil
}

// runnerArgs are the arguments of podroles in the runner's Job: the
// text report to the pod's log, the JSON report to a file.
func runnerArgs(o ManifestOptions, probes bool) []string {
	args := []string{"scenarios", "run", "--in-cluster", "--namespace", o.Namespace, "--node", o.Node.Name,
		"--facts", RunnerConfigDir + "/facts.json", "--format", "json", "--output", RunnerReportDir + "/report.json"}
	if len(o.Base) > 0 {
		args = append(args, "--inventory", RunnerConfigDir+"/inventory.yaml")
	}
	if o.Suites != nil && !slices.Equal(o.Suites, registry) {
		names := make([]string, len(o.Suites))
		for i, su := range o.Suites {
			names[i] = su.Name
		}
		args = append(args, "--suite", strings.Join(names, ","))
	}
	if o.Run != nil {
		args = append(args, "--run", o.Run.String())
	}
	if o.Disruptive {
		args = append(args, "--disruptive")
	}
	switch {
	case o.FromRunner:
		args = append(args, "--from-runner")
	case probes:
		args = append(args, "--probe-image", o.Image)
	}
	return args
}

// runnerJobSpec runs the runner once (a failed run is a verdict, not a
// reason to run again), as a user of no privilege on a read-only root.
func runnerJobSpec(o ManifestOptions, probes bool) batchv1.JobSpec {
	no, yes, nobody := false, true, int64(65532)
	report := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	if o.ReportClaim != "" {
		report = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.ReportClaim}}
	}
	var backoff int32
	return batchv1.JobSpec{
		BackoffLimit: &backoff,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": RunnerName}},
			Spec: corev1.PodSpec{
				ServiceAccountName:           RunnerName,
				AutomountServiceAccountToken: &yes,
				RestartPolicy:                corev1.RestartPolicyNever,
				SecurityContext: &corev1.PodSecurityContext{
					RunAsNonRoot: &yes, RunAsUser: &nobody, RunAsGroup: &nobody, FSGroup: &nobody,
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				},
				Containers: []corev1.Container{{
					Name:  "scenarios",
					Image: o.Image,
					Args:  runnerArgs(o, probes),
					VolumeMounts: []corev1.VolumeMount{
						{Name: "config", MountPath: RunnerConfigDir, ReadOnly: true},
						{Name: "report", MountPath: RunnerReportDir},
						// The runner writes the node's facts for the
						// suites into a temporary folder.
						{Name: "tmp", MountPath: "/tmp"},
					},
					SecurityContext: &corev1.SecurityContext{
						AllowPrivilegeEscalation: &no,
						ReadOnlyRootFilesystem:   &yes,
						Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
					},
				}},
				Volumes: []corev1.Volume{
					{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: RunnerName}}}},
					{Name: "report", VolumeSource: report},
					{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				},
			},
		},
	}
}

// Objects are the manifest's objects in the order to apply them.
func (m *Manifest) Objects() []any {
	out := []any{m.ServiceAccount, m.Role, m.RoleBinding}
	if m.Job != nil {
		out = append(out, m.ConfigMap, m.Job)
	}
	return out
}

// Write writes the manifest as YAML documents; the Role's opens with
// comments that name who needs each of its permissions.
func (m *Manifest) Write(w io.Writer) error {
	var b strings.Builder
	for i, o := range m.Objects() {
		data, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		if o == any(m.Role) {
			b.WriteString("# The access of the selected scenarios, each permission with who needs it:\n")
			for _, g := range m.Grants {
				fmt.Fprintf(&b, "#   %s: %s\n", g.Permission, strings.Join(g.By, ", "))
			}
		}
		b.Write(data)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
