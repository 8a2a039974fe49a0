package localenv

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/controlplane"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/harness/rolepublisher"
	"github.com/fediversity/podroles/harness/servers"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/inventory"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
)

// With a cluster, the node's plan runs as real pods on the machine's real
// node (kubenode). The Deployments and Services are those podroles plan
// makes; what the k8s method leaves to itself is filled in here. Each
// image is mapped to a local one:
//   - A role of a service runs its server in the service's container:
//     slapd from the servers' image for lldap, Authelia from its image.
//     The pod supervisor runs it, and exits when a secret with restart
//     changes, so that the kubelet restarts the container.
//   - The OpenBao agent (Vault's) runs in the secrets sidecar. It logs in
//     with the pod's service-account token and writes the role's secrets,
//     as the node defines them, into /run/secrets.
//   - The pods of the node's image run its stand-in image (NodeImage),
//     with systemd.
//
// Postgres and OpenBao stay in the local environment and also listen on
// the node's address, where the pods reach them. The pods reach each
// other's Services by name, as in any cluster: the node's CoreDNS answers
// for them, and kube-proxy sends their cluster IPs to their ready pods.

// RealPods is the cluster variant of an environment (Options.Cluster): a
// control plane of its own, the machine's real node, and the node's plan
// running there as real pods.
type RealPods struct {
	// opts are the environment's options, final once Up has filled in
	// their defaults.
	opts Options
	// The environment's servers that the pods use: the site's PKI,
	// secrets and programs; Postgres and OpenBao, which the pods reach
	// on the node's address; the directory's configuration, which the
	// lldap role's slapd serves.
	site         *site
	postgres     *postgres
	openbao      *openBao
	directory    *directory
	controlPlane *controlplane.ControlPlane
	node         *kubenode.Node
	plan         *plan.Plan
	// portal is nginx in front of the cluster's authelia.
	portal *portal
	// Inventory is the base inventory of the cluster's suites
	// (scenarios run --kubeconfig ... --inventory).
	Inventory string
}

// newRealPods plans the node of opts.Cluster for the environment's
// servers; Up starts the pods later, after those servers.
func newRealPods(opts Options, s *site, pg *postgres, bao *openBao, dir *directory) (*RealPods, error) {
	p, err := plan.Make(opts.Cluster, plan.Options{Namespace: opts.Namespace})
	if err != nil {
		return nil, err
	}
	return &RealPods{opts: opts, site: s, postgres: pg, openbao: bao, directory: dir, plan: p}, nil
}

// Where the real pods find what the environment gives them.
const (
	// podrolesDir holds the podroles binary (the pod supervisor), from
	// the host.
	podrolesDir = "/podroles"
	// configDir holds a role's configuration (a Secret of the
	// environment's: it has password hashes).
	configDir = "/etc/podroles"
	// trustedDir holds the PKI's CA, which the node names in its
	// fediversity.*.caFile.
	trustedDir = "/etc/ssl/podroles"
	// agentDir holds an OpenBao agent's configuration: the sidecar's, and
	// the main pod's.
	agentDir = "/etc/podroles-agent"
	// slapdDir is the directory's data in a pod of lldap, kept across
	// restarts of the container (lldap keeps its in Postgres).
	slapdDir = "/var/lib/podroles-slapd"
	// caFileName is the CA's file in trustedDir.
	caFileName = "openbao-internal-ca.pem"
)

// clusterOpenBaoPort is OpenBao's port on the node's address.
const clusterOpenBaoPort = 8200

// portalAddress is where the portal in front of the cluster's authelia
// listens.
func (r *RealPods) portalAddress() string { return r.site.host(hostClusterPortal) }

// clusterOpenBaoURL is OpenBao's address as the pods reach it.
func clusterOpenBaoURL() string {
	return "http://" + net.JoinHostPort(kubenode.NodeIP, fmt.Sprint(clusterOpenBaoPort))
}

// podWorld is what the pods of a node's plan are made from.
type podWorld struct {
	r      *RealPods
	node   *facts.Node
	plan   *plan.Plan
	ns     string
	client kubernetes.Interface
	// nodeImage is the node's stand-in image.
	nodeImage string
	// podroles is the pod supervisor's binary on the host.
	podroles string
	// bao is Vault's program on the host, which the main pod's OpenBao
	// agent runs.
	bao string
}

// serverOf names the program that serves a modular service in the pods
// (slapd for lldap), and the image it runs from.
func (r *RealPods) serverOf(service string) (server, image string, err error) {
	switch service {
	case "lldap":
		if r.opts.Images.LLDAP != "" {
			return "", "", errors.New("lldap's own image on the real node is not supported: the role is served by slapd from the servers' image (give --image lldap= or unset PODROLES_IMAGE_LLDAP)")
		}
		if r.opts.Images.Slapd != "" {
			return inventory.StandInSlapd, r.opts.Images.Slapd, nil
		}
		return inventory.StandInSlapd, r.opts.Images.Servers, nil
	case "authelia":
		return "authelia", r.opts.Images.Authelia, nil
	case workerRole:
		return workerRole, r.opts.Images.Servers, nil
	}
	return "", "", fmt.Errorf("no local image serves the modular service %s on the real node (there are lldap, served by slapd, authelia, and the test's worker)", service)
}

// startPods deploys the node's plan as real pods and waits until every
// Deployment is Available.
func (r *RealPods) startPods(ctx context.Context) error {
	client, err := r.controlPlane.Client()
	if err != nil {
		return err
	}
	return r.deploy(ctx, &podWorld{r: r, node: r.opts.Cluster, plan: r.plan, ns: r.opts.Namespace, client: client})
}

// Deploy deploys another node's plan as real pods on the cluster, in a
// namespace of its own, and waits until its Deployments are Available.
// Its roles' secrets come from the environment's OpenBao.
func (r *RealPods) Deploy(ctx context.Context, n *facts.Node, namespace string) error {
	if r == nil || r.node == nil {
		return errors.New("env: no cluster with a real node (Options.Cluster)")
	}
	client, err := r.controlPlane.Client()
	if err != nil {
		return err
	}
	p, err := plan.Make(n, plan.Options{Namespace: namespace})
	if err != nil {
		return err
	}
	return r.deploy(ctx, &podWorld{r: r, node: n, plan: p, ns: namespace, client: client})
}

// Node is the machine's real node.
func (r *RealPods) Node() *kubenode.Node { return r.node }

// deploy makes a plan's pods run.
func (r *RealPods) deploy(ctx context.Context, w *podWorld) error {
	var err error
	if w.podroles, err = r.site.podroles(); err != nil {
		return err
	}
	if _, _, ok := readerPasswordSecret(w.node); ok {
		if w.bao = cmp.Or(servers.Find("vault"), servers.Find("bao")); w.bao == "" {
			return errors.New("the main pod's OpenBao agent (the stand-in of unit openbao-agent) runs Vault's program from the host, and none was found (make servers)")
		}
	}
	for _, step := range []struct {
		what string
		do   func(context.Context) error
	}{
		{"images", w.importImages},
		{"openbao for the pods", w.configureOpenBao},
		{"objects, the directory's Available first", w.apply},
	} {
		start := time.Now()
		if err := step.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", step.what, err)
		}
		if r.opts.Progress != nil {
			fmt.Fprintf(r.opts.Progress, "env: pods: %s in %s\n", step.what, time.Since(start).Round(10*time.Millisecond))
		}
	}
	return nil
}

// importImages imports into the node what the plan's pods run: the
// servers' images from the local engine's store, and the node's stand-in
// image, written on top of the node base.
func (w *podWorld) importImages(ctx context.Context) error {
	refs := map[string]bool{}
	needsAgent := false
	for _, r := range w.node.RoleNames() {
		role := w.node.PodRoles.Roles[r]
		if !role.Requested() || role.RunsNodeImage() {
			continue
		}
		_, image, err := w.r.serverOf(*role.Service)
		if err != nil {
			return err
		}
		refs[image] = true
		needsAgent = needsAgent || len(role.Secrets) > 0
	}
	if needsAgent {
		if w.r.opts.Images.OpenBao == "" {
			return errors.New("the secrets sidecars run OpenBao's image, and none is given (PODROLES_IMAGE_OPENBAO, make images)")
		}
		refs[w.r.opts.Images.OpenBao] = true
	}
	if w.r.opts.Images.Runner != "" {
		// For the suites' Job (scenarios manifest).
		refs[w.r.opts.Images.Runner] = true
	}
	// One after the other: they share Debian's layer, which containerd
	// then unpacks once.
	if err := w.r.node.Containerd().ImportLocal(ctx, ContainerEngine(), slices.Sorted(maps.Keys(refs))...); err != nil {
		return err
	}
	base := filepath.Join(clusterDir(w.r.opts.Dir), "node-base.oci.tar")
	defer os.Remove(base)
	if err := kubenode.SaveLocal(ctx, ContainerEngine(), w.r.opts.Images.Node, base); err != nil {
		return err
	}
	img := NodeImage(w.node, w.r.opts.Images.Node, base)
	w.nodeImage = img.Ref
	return w.r.node.Containerd().Import(ctx, img)
}

// ContainerEngine is the command of the engine whose store holds the
// images (make images builds them with podman).
func ContainerEngine() string {
	if cli := os.Getenv("CONTAINER_CLI"); cli != "" {
		return cli
	}
	return "podman"
}

// configureOpenBao lets each role's pods read their secrets: the
// kubernetes auth method, which checks a pod's service-account token with
// the API server, and for each role with secrets a policy that reads
// exactly its secrets' paths, and a role of the method that gives it to
// the namespace's pods. The KV entries that the node's secrets name get
// values where the environment has none.
func (w *podWorld) configureOpenBao(ctx context.Context) error {
	if w.r.openbao == nil {
		return nil
	}
	bao := w.r.openbao.client
	var mounts map[string]any
	if err := bao.Do(ctx, http.MethodGet, "sys/auth", nil, &mounts); err != nil {
		return err
	}
	if _, ok := mounts["kubernetes/"]; !ok {
		if err := bao.Write(ctx, "sys/auth/kubernetes", map[string]any{"type": "kubernetes"}); err != nil {
			return err
		}
	}
	steps := []struct {
		path string
		data any
	}{
		{"auth/kubernetes/config", map[string]any{
			"kubernetes_host": w.r.controlPlane.Server, "kubernetes_ca_cert": string(w.r.controlPlane.CA().PEM), "disable_local_ca_jwt": true,
		}},
	}
	readers := map[string]map[string]facts.Secret{}
	for _, r := range w.node.RoleNames() {
		if role := w.node.PodRoles.Roles[r]; role.Requested() && len(role.Secrets) > 0 {
			readers[r] = role.Secrets
		}
	}
	// The main pod's agent reads the KV entry of the reader's password,
	// and the stand-in of lldap-publish-roles writes the roles' entry
	// with its token.
	if _, secret, ok := readerPasswordSecret(w.node); ok {
		readers[names.MainRole] = map[string]facts.Secret{"": secret}
		if p, ok := PublishedRolesPath(w.node, w.ns); ok {
			readers[names.MainRole][publishRolesUnit] = facts.Secret{Path: p}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(readers)) {
		var policy strings.Builder
		paths := map[string]bool{}
		for _, s := range readers[r] {
			paths[s.Path] = true
		}
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			caps := `"read", "create", "update"`
			if r == names.MainRole && p != readers[r][publishRolesUnit].Path {
				// The main pod's token sits in a file there, for the
				// publisher: it may write the published roles only.
				caps = `"read"`
			}
			fmt.Fprintf(&policy, "path %q { capabilities = [%s] }\n", p, caps)
		}
		name := w.ns + "-" + r
		steps = append(steps,
			struct {
				path string
				data any
			}{"sys/policies/acl/" + name, map[string]any{"policy": policy.String()}},
			struct {
				path string
				data any
			}{"auth/kubernetes/role/" + name, map[string]any{
				"bound_service_account_names": []string{"default"}, "bound_service_account_namespaces": []string{w.ns},
				"token_policies": []string{name}, "token_ttl": "1h",
			}})
	}
	for _, s := range steps {
		if err := bao.Write(ctx, s.path, s.data); err != nil {
			return err
		}
	}
	return w.seedKV(ctx)
}

// seedKV gives the KV fields that the node's secrets read a value where
// the environment's OpenBao has none: random text, base64 encoded where
// the secret decodes it, as VAR=VALUE where it takes a variable. The
// reader's password is the directory's own (the password of its reader
// user), which the main pod's agent renders for the reader.
func (w *podWorld) seedKV(ctx context.Context) error {
	_, reader, hasReader := readerPasswordSecret(w.node)
	want := map[string]map[string]any{}
	for _, r := range w.node.RoleNames() {
		role := w.node.PodRoles.Roles[r]
		if !role.Requested() {
			continue
		}
		for _, file := range slices.Sorted(maps.Keys(role.Secrets)) {
			s := role.Secrets[file]
			if s.Field == nil || s.Template != nil || !strings.Contains(s.Path, "/data/") {
				continue
			}
			fields := w.r.openbao.kv[s.Path]
			if fields == nil {
				fields = map[string]any{}
			}
			if want[s.Path] == nil {
				want[s.Path] = maps.Clone(fields)
			}
			have, _ := want[s.Path][*s.Field].(string)
			value := randomPassword()
			if hasReader && file == roleBindPasswordSecret && s.Path == reader.Path && *s.Field == *reader.Field {
				value = w.r.site.secrets.bind
			}
			switch {
			case s.Variable != nil && strings.Contains(have, *s.Variable+"="):
				continue
			case s.Variable != nil:
				value = have + *s.Variable + "=" + value + "\n"
			case have != "":
				continue
			}
			if s.Encoding != nil && *s.Encoding == "base64" {
				value = base64.StdEncoding.EncodeToString([]byte(value))
			}
			want[s.Path][*s.Field] = value
		}
	}
	for _, p := range slices.Sorted(maps.Keys(want)) {
		if maps.Equal(want[p], w.r.openbao.kv[p]) {
			continue
		}
		if err := w.r.openbao.client.Write(ctx, p, map[string]any{"data": want[p]}); err != nil {
			return err
		}
		w.r.openbao.kv[p] = want[p]
	}
	return nil
}

// apply creates the namespace, what the pods read (configurations, the
// CA, the right of the namespace's service accounts to have their tokens
// reviewed, which OpenBao's login asks for), the Services and the
// Deployments, made runnable.
func (w *podWorld) apply(ctx context.Context) error {
	ns := w.ns
	c := w.client
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Namespace %s: %w", ns, err)
	}
	review := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podroles-openbao-login-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: ns}},
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, review, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", review.Name, err)
	}
	if err := w.create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podroles-ca"}, Data: map[string]string{caFileName: string(w.r.site.caPEM)}}); err != nil {
		return err
	}
	for _, svc := range w.plan.Services {
		if _, err := c.CoreV1().Services(ns).Create(ctx, svc.DeepCopy(), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Service %s: %w", svc.Name, err)
		}
	}
	if err := w.postgresService(ctx); err != nil {
		return err
	}
	// The directory first, available before the rest: authelia checks
	// its LDAP at start and exits where it does not answer, so on a
	// loaded machine it restarted until slapd was up, and a new
	// environment's pods began with restarts that the suites rightly
	// cannot judge past (service-started-after-secrets).
	directory, rest := w.directoryFirst()
	for _, group := range [][]*appsv1.Deployment{directory, rest} {
		for _, planned := range group {
			d := planned.DeepCopy()
			d.Namespace = ns
			if err := w.runnable(ctx, d); err != nil {
				return fmt.Errorf("deployment %s: %w", d.Name, err)
			}
			if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Deployment %s: %w", d.Name, err)
			}
		}
		if err := w.waitAvailable(ctx, group); err != nil {
			return err
		}
	}
	return nil
}

// directoryFirst splits the plan's Deployments into the roles that serve
// the directory (lldap's, or slapd standing in for it) and the rest.
func (w *podWorld) directoryFirst() (directory, rest []*appsv1.Deployment) {
	for _, d := range w.plan.Deployments {
		role := w.node.PodRoles.Roles[d.Spec.Template.Labels[names.LabelRole]]
		if role.Service != nil && *role.Service == "lldap" {
			directory = append(directory, d)
		} else {
			rest = append(rest, d)
		}
	}
	return directory, rest
}

// postgresService is the platform's Postgres as the namespace's pods
// reach it, by the name the examples' URLs give (postgres.<namespace>.svc):
// a Service without selector, whose one endpoint is the environment's
// PostgreSQL on the node's address, as a platform points a Service at a
// database out of the cluster.
func (w *podWorld) postgresService(ctx context.Context) error {
	const name, port = "postgres", 5432
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: name, Port: port, TargetPort: intstr.FromInt(w.r.postgres.port), Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := w.client.CoreV1().Services(w.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Service %s: %w", name, err)
	}
	portName, target, tcp, ready := name, int32(w.r.postgres.port), corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-host", Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "podroles-env"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{kubenode.NodeIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &target, Protocol: &tcp}},
	}
	if _, err := w.client.DiscoveryV1().EndpointSlices(w.ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create EndpointSlice %s: %w", slice.Name, err)
	}
	return nil
}

// create creates an object of the namespace (a ConfigMap or a Secret).
func (w *podWorld) create(ctx context.Context, obj any) error {
	var err error
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		_, err = w.client.CoreV1().ConfigMaps(w.ns).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Secret:
		_, err = w.client.CoreV1().Secrets(w.ns).Create(ctx, o, metav1.CreateOptions{})
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T in %s: %w", obj, w.ns, err)
	}
	return nil
}

// runnable fills in what the plan leaves to the method, for this node:
// images, commands and what they read. What the contract fixes (names,
// replicas, containers' names, the companion's command, variables,
// ports, the secrets volume and the sidecar) stays as planned.
func (w *podWorld) runnable(ctx context.Context, d *appsv1.Deployment) error {
	spec := &d.Spec.Template.Spec
	role := d.Spec.Template.Labels[names.LabelRole]
	grace := int64(5)
	spec.TerminationGracePeriodSeconds = &grace
	var r facts.Role
	if role != names.MainRole {
		r = w.node.PodRoles.Roles[role]
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == plan.ContainerSidecar {
			if err := w.sidecar(ctx, d, &spec.InitContainers[i], role, r); err != nil {
				return err
			}
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.ImagePullPolicy = corev1.PullNever
		var err error
		switch c.Name {
		case plan.ContainerNode:
			w.nodeContainer(spec, c, role)
			if role == names.MainRole {
				err = w.nodeFiles(ctx, d, c)
			}
		case plan.ContainerCompanion:
			err = w.companion(ctx, spec, c)
		case plan.ContainerSidecar:
			err = w.sidecar(ctx, d, c, role, r) // a plan with the sidecar among the containers
		default:
			err = w.service(ctx, d, c, role, r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nodeContainer runs the node's stand-in image: systemd as PID 1, which
// wants a writable cgroup file system (privileged, on this cgroup v1
// machine) and tmpfs on /run, /run/lock and /tmp, and the pod's role as a
// file of PodRoleDir, from the pod's own role label.
func (w *podWorld) nodeContainer(spec *corev1.PodSpec, c *corev1.Container, role string) {
	c.Image = w.nodeImage
	privileged := true
	c.SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
	for _, m := range []struct{ name, at string }{{"run", "/run"}, {"run-lock", "/run/lock"}, {"tmp", "/tmp"}} {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: m.name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: m.name, MountPath: m.at})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "podrole", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: role, FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", names.LabelRole)}}},
	}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podrole", MountPath: PodRoleDir, ReadOnly: true})
}

// nodeFiles puts into the main pod the node's own files that a reader of
// its contracts opens there: the CA files that fediversity.lldap.tls.caFile
// and fediversity.authelia.caFile name (the PKI's CA), and the reader's
// password file, fediversity.lldap.readerBindPasswordFile. The main pod's
// own OpenBao agent writes that one from the KV entry of the bind
// password, as on the platform (mainAgent); a node whose lldap role has no
// such secret gets the environment's password as a file instead.
func (w *podWorld) nodeFiles(ctx context.Context, d *appsv1.Deployment, c *corev1.Container) error {
	n := w.node
	var caFiles []string
	for _, f := range []*string{n.LLDAP.TLS.CAFile, n.Authelia.CAFile} {
		if f != nil && !slices.Contains(caFiles, *f) {
			caFiles = append(caFiles, *f)
		}
	}
	_, secret, rendered := readerPasswordSecret(n)
	files := map[string][]byte{}
	if n.LLDAP.ReaderBindPasswordFile != nil && !rendered {
		files["bind-password"] = []byte(w.r.site.secrets.bind)
	}
	if err := w.mountConfig(ctx, d, c, files, caFiles...); err != nil {
		return err
	}
	switch f := n.LLDAP.ReaderBindPasswordFile; {
	case rendered:
		return w.mainAgent(ctx, d, c, *f, secret)
	case f != nil:
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles-config", MountPath: *f, SubPath: "bind-password", ReadOnly: true})
	}
	return nil
}

// roleBindPasswordSecret is the secret of the lldap role that holds the
// bind password of the reader: the file of the role's bindPasswordFile
// (/run/secrets/bind-password), which the node surface does not name.
const roleBindPasswordSecret = "bind-password"

// readerPasswordSecret is the KV entry that the main pod's agent renders
// into fediversity.lldap.readerBindPasswordFile: the one the sidecar of
// the lldap role reads for its roleBindPasswordSecret (Known Deviations),
// and that role. False where the node gives no reader's file, or its
// lldap role no such secret of a KV field.
func readerPasswordSecret(n *facts.Node) (string, facts.Secret, bool) {
	if n.LLDAP.ReaderBindPasswordFile == nil {
		return "", facts.Secret{}, false
	}
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if role.Requested() && role.Service != nil && *role.Service == "lldap" {
			s, ok := role.Secrets[roleBindPasswordSecret]
			return r, s, ok && s.Field != nil
		}
	}
	return "", facts.Secret{}, false
}

// mainAgent lets the main pod's OpenBao agent (the stand-in of the
// platform's unit openbao-agent) render the reader's password file: its
// configuration, the pod's token to log in with, and Vault's program from
// the host.
func (w *podWorld) mainAgent(ctx context.Context, d *appsv1.Deployment, c *corev1.Container, file string, secret facts.Secret) error {
	tmpl, err := agentTemplate(secret)
	if err != nil {
		return fmt.Errorf("the reader's password: %w", err)
	}
	templates := []map[string]any{{"contents": tmpl, "destination": file, "perms": "0600", "error_on_missing_key": true}}
	files := map[string][]byte{}
	sink := ""
	if p, ok := PublishedRolesPath(w.node, w.ns); ok {
		sink = mainAgentToken
		if files[path.Base(publishRolesConfig)], err = w.publishRolesConfig(p, file); err != nil {
			return err
		}
	}
	if err := w.agentConfigMap(ctx, d, c, agentConfig(w.ns+"-"+names.MainRole, templates, sink), files); err != nil {
		return err
	}
	spec := &d.Spec.Template.Spec
	if sink != "" {
		w.mountPodroles(spec, c)
	}
	expiry, file0 := int64(3600), corev1.HostPathFile
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "podroles-identity", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiry}},
		}}}},
		corev1.Volume{Name: "podroles-bao", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: w.bao, Type: &file0}}})
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "podroles-identity", MountPath: plan.IdentityDir, ReadOnly: true},
		corev1.VolumeMount{Name: "podroles-bao", MountPath: nodeAgentProgram, ReadOnly: true})
	return nil
}

// supervised runs argv under the pod supervisor: restarted, by the
// container's exit, when a secret with restart changes; given the
// variables of the role's environment files (*.env) at each start.
func (w *podWorld) supervised(spec *corev1.PodSpec, c *corev1.Container, r facts.Role, argv []string) {
	cmd := []string{podrolesDir + "/podroles", "pod", "--exit", "--termination-log", "/dev/termination-log", "--name", "$(POD_NAME)"}
	for _, file := range slices.Sorted(maps.Keys(r.Secrets)) {
		if r.Secrets[file].Restart {
			cmd = append(cmd, "--restart-on", path.Join(plan.SecretsDir, file))
		}
		if strings.HasSuffix(file, ".env") {
			cmd = append(cmd, "--env-file", path.Join(plan.SecretsDir, file))
		}
	}
	c.Command, c.Args = append(append(cmd, "--"), argv...), nil
	c.Env = append(c.Env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	w.mountPodroles(spec, c)
}

// mountPodroles puts podroles' program from the host into container c,
// at podrolesDir/podroles.
func (w *podWorld) mountPodroles(spec *corev1.PodSpec, c *corev1.Container) {
	if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "podroles" }) {
		file := corev1.HostPathFile
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "podroles", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: w.podroles, Type: &file}}})
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles", MountPath: podrolesDir + "/podroles", ReadOnly: true})
}

// publishRolesUnit is the node's unit that publishes the members of a
// role group of the directory to OpenBao (US2-11); in the test cluster's
// main pod, its stand-in is rolepublisher.
const publishRolesUnit = "lldap-publish-roles"

// mainAgentToken is where the main pod's agent writes its token (a file
// sink), for the stand-in of lldap-publish-roles.
const mainAgentToken = "/run/podroles-agent-token"

// PublishedRolesPath is the KV entry that the stand-in of
// lldap-publish-roles writes in the namespace ns, beside the reader's
// password under its mount, and whether the node's main pod runs the unit
// with a reader's password its agent renders. The spec names no entry:
// the inventory names this one for the suites.
func PublishedRolesPath(n *facts.Node, ns string) (string, bool) {
	if !slices.Contains(nodeUnitPods(n)[publishRolesUnit], names.MainRole) {
		return "", false
	}
	_, secret, ok := readerPasswordSecret(n)
	if !ok {
		return "", false
	}
	mount, _, ok := strings.Cut(secret.Path, "/data/")
	if !ok {
		return "", false
	}
	return mount + "/data/" + ns + "/published-roles", true
}

// publishedGroup is the group whose members the stand-in publishes: the
// one the suites' reader must find.
const publishedGroup = "lldap_strict_readonly"

// publishRolesConfig is the stand-in's configuration: the ldap contract
// as the node states it (its host, the LDAPS port, its CA file, the
// reader's password file the agent renders), and where to publish.
func (w *podWorld) publishRolesConfig(kvPath, passwordFile string) ([]byte, error) {
	n := w.node
	if n.LLDAP.Host == "" || n.LLDAP.TLS.CAFile == nil {
		return nil, fmt.Errorf("node %s runs %s in its main pod, and states no fediversity.lldap.host or tls.caFile to reach the directory", n.Name, publishRolesUnit)
	}
	return json.MarshalIndent(rolepublisher.Config{
		LDAPS: net.JoinHostPort(n.LLDAP.Host, strconv.Itoa(PortLDAPS)), CAFile: *n.LLDAP.TLS.CAFile,
		BindDN: "uid=authelia-bind,ou=people," + baseDN, BindPasswordFile: passwordFile, BaseDN: baseDN, Group: publishedGroup,
		OpenBao: clusterOpenBaoURL(), TokenFile: mainAgentToken, Path: kvPath, Interval: "2s",
	}, "", "  ")
}

// metricsAddress is where a service serves the node's metrics of its
// role (tcp://:PORT/PATH); "" for a role with none.
func metricsAddress(m *facts.Metrics) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf("tcp://:%d%s", m.Port, m.Path)
}

// mountConfig mounts a Secret of the Deployment's configuration files at
// configDir, and the PKI's CA at trustedDir and at the node's CA files.
func (w *podWorld) mountConfig(ctx context.Context, d *appsv1.Deployment, c *corev1.Container, files map[string][]byte, caFiles ...string) error {
	spec := &d.Spec.Template.Spec
	name := d.Name + "-podroles"
	if err := w.create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: files}); err != nil {
		return err
	}
	spec.Volumes = append(spec.Volumes,
		corev1.Volume{Name: "podroles-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}},
		corev1.Volume{Name: "podroles-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "podroles-ca"}}}})
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "podroles-config", MountPath: configDir, ReadOnly: true},
		corev1.VolumeMount{Name: "podroles-ca", MountPath: trustedDir, ReadOnly: true})
	for _, f := range caFiles {
		if f != "" {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles-ca", MountPath: f, SubPath: caFileName, ReadOnly: true})
		}
	}
	return nil
}

// service runs the server of a role's service in its container.
func (w *podWorld) service(ctx context.Context, d *appsv1.Deployment, c *corev1.Container, role string, r facts.Role) error {
	server, image, err := w.r.serverOf(c.Name)
	if err != nil {
		return err
	}
	c.Image = image
	spec := &d.Spec.Template.Spec
	if len(c.Ports) > 0 {
		// Ready once it serves, as the Service needs.
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(c.Ports[0].ContainerPort)}}, PeriodSeconds: 1}
	}
	switch server {
	case inventory.StandInSlapd:
		tls := slapdTLS{ca: path.Join(trustedDir, caFileName), cert: path.Join(plan.SecretsDir, "tls.pem"), key: path.Join(plan.SecretsDir, "tls.pem")}
		files := map[string][]byte{
			"slapd.conf":     []byte(w.r.directory.slapdConfig(slapdDir, tls, "/etc/ldap/schema", "/usr/lib/ldap")),
			"directory.ldif": []byte(w.r.directory.ldif()),
		}
		if err := w.mountConfig(ctx, d, c, files, caFileOf(w.node.LLDAP.TLS.CAFile)); err != nil {
			return err
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "slapd-data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "slapd-data", MountPath: slapdDir})
		conf := path.Join(configDir, "slapd.conf")
		// The directory is loaded once per pod: a restarted container
		// keeps what it holds, as lldap's database would.
		start := fmt.Sprintf(`mkdir -p %[1]s/data && { [ -e %[1]s/data/data.mdb ] || slapadd -f %[2]s -l %[3]s; } && exec slapd -d stats -f %[2]s -h "ldap://:%[4]d/ ldaps://:%[5]d/"`,
			slapdDir, conf, path.Join(configDir, "directory.ldif"), PortLDAP, PortLDAPS)
		w.supervised(spec, c, r, []string{"/bin/sh", "-c", start})
	case "authelia":
		bindPassword := "/var/lib/lldap-reader/bind-password"
		if f := w.node.LLDAP.ReaderBindPasswordFile; f != nil {
			bindPassword = *f
		}
		config := w.r.site.autheliaConfig(autheliaSettings{
			trusted: trustedDir, listen: fmt.Sprintf(":%d", PortAuthelia), secrets: plan.SecretsDir,
			ldap:     net.JoinHostPort(w.node.LLDAP.Host, fmt.Sprint(PortLDAPS)),
			postgres: net.JoinHostPort(kubenode.NodeIP, fmt.Sprint(w.r.postgres.port)),
			database: clusterAutheliaDatabase, notifier: "/tmp", bindPassword: bindPassword,
			metrics: metricsAddress(r.Metrics),
		})
		files := map[string][]byte{"configuration.yml": []byte(config), "bind-password": []byte(w.r.site.secrets.bind)}
		if err := w.mountConfig(ctx, d, c, files, caFileOf(w.node.Authelia.CAFile)); err != nil {
			return err
		}
		// The reader's password where the node keeps it
		// (fediversity.lldap.readerBindPasswordFile).
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles-config", MountPath: bindPassword, SubPath: "bind-password", ReadOnly: true})
		w.supervised(spec, c, r, []string{"authelia", "--config", path.Join(configDir, "configuration.yml")})
	case workerRole:
		// Its pod's behaviour is under test, not its program.
		w.supervised(spec, c, r, []string{"sleep", "infinity"})
	}
	return nil
}

func caFileOf(f *string) string {
	if f == nil {
		return ""
	}
	return *f
}

// companionScript stands in for the companion's program (lldap-provision,
// which provisions lldap with OpenTofu and keeps its state in Postgres,
// where the environment has put it): it waits until the pod's directory
// answers, says so, and stays.
const companionScript = `#!/bin/sh
# The companion of the podroles test cluster; see harness/realpods.go.
until ldapsearch -x -LLL -H ldap://127.0.0.1:%d -s base -b "" namingContexts >/dev/null 2>&1; do sleep 1; done
echo "companion: the pod's directory answers"
exec sleep infinity
`

// companion puts the stand-in program at the path the plan runs
// (services.<s>.companion), from the service's image.
func (w *podWorld) companion(ctx context.Context, spec *corev1.PodSpec, c *corev1.Container) error {
	server := spec.Containers[0].Name
	_, image, err := w.r.serverOf(server)
	if err != nil {
		return err
	}
	c.Image = image
	if len(c.Command) == 0 {
		return errors.New("the companion has no program")
	}
	if err := w.create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podroles-companion"}, Data: map[string]string{"companion": fmt.Sprintf(companionScript, PortLDAP)}}); err != nil {
		return err
	}
	mode := int32(0o755)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "podroles-companion", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "podroles-companion"}, DefaultMode: &mode,
	}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles-companion", MountPath: c.Command[0], SubPath: "companion", ReadOnly: true})
	return nil
}

// sidecar runs the OpenBao agent: logged in with the pod's token through
// the kubernetes auth method, it writes each secret of the role into
// /run/secrets, as the node defines it.
func (w *podWorld) sidecar(ctx context.Context, d *appsv1.Deployment, c *corev1.Container, role string, r facts.Role) error {
	c.Image, c.ImagePullPolicy = w.r.opts.Images.OpenBao, corev1.PullNever
	var templates []map[string]any
	for _, file := range slices.Sorted(maps.Keys(r.Secrets)) {
		tmpl, err := agentTemplate(r.Secrets[file])
		if err != nil {
			return fmt.Errorf("secret %s: %w", file, err)
		}
		templates = append(templates, map[string]any{"contents": tmpl, "destination": path.Join(plan.SecretsDir, file), "perms": "0600", "error_on_missing_key": true})
	}
	if err := w.agentConfigMap(ctx, d, c, agentConfig(w.ns+"-"+role, templates, ""), nil); err != nil {
		return err
	}
	c.Command, c.Args = []string{"bao", "agent", "-config=" + path.Join(agentDir, "agent.json")}, nil
	c.Env = append(c.Env, corev1.EnvVar{Name: "HOME", Value: "/tmp"})
	return nil
}

// agentConfig is an OpenBao agent's configuration: logged in as a role
// of the kubernetes auth method with the pod's token, it renders the
// templates, a KV entry again every 2 s.
func agentConfig(authRole string, templates []map[string]any, sink string) []byte {
	auth := map[string]any{"method": []any{map[string]any{
		"type": "kubernetes", "mount_path": "auth/kubernetes",
		"config": map[string]any{"role": authRole, "token_path": path.Join(plan.IdentityDir, "token")},
	}}}
	if sink != "" {
		auth["sink"] = []any{map[string]any{"type": "file", "config": map[string]any{"path": sink}}}
	}
	config := map[string]any{
		"pid_file":        "/tmp/agent.pid",
		"vault":           map[string]any{"address": clusterOpenBaoURL()},
		"auto_auth":       auth,
		"template_config": map[string]any{"static_secret_render_interval": "2s"},
		"template":        templates,
	}
	data, _ := json.MarshalIndent(config, "", "  ")
	return data
}

// agentConfigMap puts an agent's configuration, with files beside it,
// into a ConfigMap of the Deployment (<deployment>-agent), mounted in
// container c at agentDir.
func (w *podWorld) agentConfigMap(ctx context.Context, d *appsv1.Deployment, c *corev1.Container, config []byte, files map[string][]byte) error {
	name := d.Name + "-agent"
	data := map[string]string{"agent.json": string(config)}
	for f, b := range files {
		data[f] = string(b)
	}
	if err := w.create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}); err != nil {
		return err
	}
	spec := &d.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "podroles-agent", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "podroles-agent", MountPath: agentDir, ReadOnly: true})
	return nil
}

// waitAvailable waits until each of deployments has all its replicas
// ready, and says what keeps a pod from it when one does not.
func (w *podWorld) waitAvailable(ctx context.Context, deployments []*appsv1.Deployment) error {
	for _, d := range deployments {
		probe := poll.Probe{Endpoint: "Deployment " + w.ns + "/" + d.Name, Expect: fmt.Sprintf("%d ready replicas", *d.Spec.Replicas), Within: 3 * time.Minute}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			got, err := w.client.AppsV1().Deployments(w.ns).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got.Status.ReadyReplicas == *d.Spec.Replicas && got.Status.UpdatedReplicas == *d.Spec.Replicas && got.Status.Replicas == *d.Spec.Replicas {
				return nil
			}
			return poll.Saw("%d ready of %d; %s", got.Status.ReadyReplicas, *d.Spec.Replicas, PodTrouble(ctx, w.client, got))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// PodTrouble says, on one line, why the pods of a Deployment are not
// ready: each container that waits or ended, with the reason and the
// end of its log.
func PodTrouble(ctx context.Context, client kubernetes.Interface, d *appsv1.Deployment) string {
	pods, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		statuses := append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...)
		for _, s := range statuses {
			if s.Ready {
				continue
			}
			what := kube.ContainerState(s)
			if what == "" {
				what = "container " + s.Name + " not ready"
			}
			if s.RestartCount > 0 || s.State.Terminated != nil {
				tail := int64(3)
				log, err := client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: s.Name, TailLines: &tail, Previous: s.State.Terminated == nil && s.RestartCount > 0}).DoRaw(ctx)
				if err == nil {
					what += ": " + oneline.Of(string(log))
				}
			}
			out = append(out, fmt.Sprintf("pod %s %s (restarts %d)", p.Name, what, s.RestartCount))
		}
		// What the kubelet could not do for the pod (a volume, a
		// sandbox) is in its last warning.
		events, err := client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name + ",type=Warning"})
		if err == nil && len(events.Items) > 0 {
			last := slices.MaxFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
			out = append(out, fmt.Sprintf("pod %s: %s: %s", p.Name, last.Reason, last.Message))
		}
	}
	if len(out) == 0 {
		return "no pod says why"
	}
	return strings.Join(out, "; ")
}

// hasRole says the cluster's node requests a role of that name.
func (r *RealPods) hasRole(name string) bool {
	role, ok := r.opts.Cluster.PodRoles.Roles[name]
	return ok && role.Requested()
}

// start starts the control plane and the machine's real node, whose
// address the local servers then listen on too.
func (r *RealPods) start(ctx context.Context) error {
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: clusterDir(r.opts.Dir), Loopback: r.opts.Loopback, Nodes: true, RealNode: true,
		ServiceCIDR: kubenode.ServiceSubnet, Detached: r.opts.Detached})
	if err != nil {
		return err
	}
	r.controlPlane = cp
	r.node, err = kubenode.Start(ctx, kubenode.Options{
		Dir: filepath.Join(clusterDir(r.opts.Dir), "node"), Server: cp.Server, CA: cp.CA(), AdminKubeconfig: cp.Kubeconfig,
		Detached: r.opts.Detached, Wait: r.opts.NodeWait, StopHint: "podroles env down --dir " + r.opts.Dir,
	})
	return err
}

// startPortal starts the portal of the cluster's node: nginx, as
// the main pod's would, in front of the authelia role's Service, whose
// cluster IP kube-proxy serves to the host too.
func (r *RealPods) startPortal(ctx context.Context) error {
	client, err := r.controlPlane.Client()
	if err != nil {
		return err
	}
	svc, err := client.CoreV1().Services(r.opts.Namespace).Get(ctx, r.opts.Cluster.Name+"-authelia", metav1.GetOptions{})
	if err != nil {
		return err
	}
	r.portal = &portal{site: r.site, openbao: r.openbao, name: "nginx-cluster", at: r.portalAddress(),
		upstream: net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(PortAuthelia))}
	return r.portal.start(ctx)
}

// StandInNodeUnits is what the test cluster's node image runs in place
// of a node's units: systemd units that only sleep, so its roles serve
// none of their ports.
const StandInNodeUnits = "the node image's stand-in units, which serve no port"

// NodeImageStandIns are the roles of the node's image with a Service,
// marked as run by the stand-in units of the test cluster's node image,
// for a base inventory: a scenario that would reach their ports says why
// it does not.
func NodeImageStandIns(n *facts.Node) map[string]*inventory.Role {
	out := map[string]*inventory.Role{}
	for _, r := range n.RoleNames() {
		if role := n.PodRoles.Roles[r]; role.Requested() && role.RunsNodeImage() && names.HasService(role) {
			out[r] = &inventory.Role{StandIn: StandInNodeUnits}
		}
	}
	return out
}

// writeInventory writes the base of the cluster's inventory: what
// neither the cluster nor the node can tell (the ldap contract's port and
// DNs, the admin's password, Postgres, OpenBao and its agents' render
// interval, the cluster's portal, the secrets the rotation suite may
// write); the runner finds the pods and Services, and takes the rest (the
// contract's host and files, the roles' secrets) from the node.
func (rp *RealPods) writeInventory() error {
	n := rp.opts.Cluster
	inv := &inventory.Inventory{Node: n.Name, Roles: map[string]*inventory.Role{}}
	var restart, noRestart *inventory.SecretRef
	maps.Copy(inv.Roles, NodeImageStandIns(n))
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if !role.Requested() || role.RunsNodeImage() {
			continue
		}
		server, _, err := rp.serverOf(*role.Service)
		if err != nil {
			return err
		}
		inv.Roles[r] = &inventory.Role{}
		if server != *role.Service {
			inv.Roles[r].StandIn = server
		}
		for _, file := range slices.Sorted(maps.Keys(role.Secrets)) {
			s := role.Secrets[file]
			if s.Field == nil || s.Variable != nil || s.Template != nil || !strings.Contains(s.Path, "/data/") {
				continue
			}
			ref := &inventory.SecretRef{Role: r, File: file}
			if s.Restart && restart == nil {
				restart = ref
			}
			if !s.Restart && noRestart == nil {
				noRestart = ref
			}
		}
		if server == inventory.StandInSlapd {
			inv.LDAP = &inventory.LDAP{
				Port: PortLDAPS, PlainPort: PortLDAP, BaseDN: baseDN, BindDN: "uid=authelia-bind,ou=people," + baseDN,
				User: "authelia-bind", Group: publishedGroup, AdminUser: "admin", AdminPasswordFile: "secrets/admin-password",
			}
			inv.Postgres = &inventory.Postgres{Role: r, Schema: "lldap_provision", UsersTable: "users"}
			inv.LDAP.PublishedRoles, _ = PublishedRolesPath(n, rp.opts.Namespace)
		}
	}
	inv.OpenBao = &inventory.OpenBao{Address: rp.openbao.url(), TokenFile: "secrets/openbao-token", RenderInterval: RenderInterval.String()}
	// The reader's password is the lldap role's, which the main pod's
	// agent renders too (mainAgent).
	var readerPassword *inventory.SecretRef
	if r, _, ok := readerPasswordSecret(n); ok && inv.LDAP != nil {
		readerPassword = &inventory.SecretRef{Role: r, File: roleBindPasswordSecret}
	}
	if restart != nil || noRestart != nil || readerPassword != nil {
		inv.Rotation = &inventory.Rotation{Restart: restart, NoRestart: noRestart, ReaderPassword: readerPassword}
	}
	if inv.Roles["authelia"] != nil && len(rp.opts.Faults.CertNames) == 0 {
		inv.Portal = &inventory.Portal{
			URL: "https://" + portalHost, Address: net.JoinHostPort(rp.portalAddress(), fmt.Sprint(PortPortal)),
			CAFile: "tls/ca.pem", StorageDSNFile: "secrets/authelia-cluster-storage-dsn",
		}
	}
	rp.Inventory = filepath.Join(rp.opts.Dir, "cluster-inventory.yaml")
	return inv.Write(rp.Inventory)
}

// Kubeconfig is the admin's kubeconfig of the cluster.
func (r *RealPods) Kubeconfig() string { return filepath.Join(clusterDir(r.opts.Dir), "kubeconfig") }
