package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/scenarios/inventory"
)

// KWOK's pods run nothing: what a pod answers to exec and port-forward is
// what its Exec and PortForward objects say. Bind makes them for the pods
// of a plan, so that each pod's ports lead to a server of the local
// environment and each pod of the node's image answers `systemctl show`
// from unit states of its own.

var (
	crdResource         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	execResource        = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "execs"}
	portForwardResource = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}
)

// fakeSystemctl stands in for the systemd of a pod of the node's image,
// which a KWOK pod lacks: `systemctl show UNIT...` prints a block of
// properties per unit, from the unit's file in $PODROLES_UNITS, or those of
// a unit that does not exist. Options are ignored: the caller picks the
// properties it needs. Only the transport (exec through the API server
// and the kubelet) and what the suites make of the answer are under test.
const fakeSystemctl = `#!/bin/sh
set -eu
if [ "${1:-}" != show ]; then
	echo "systemctl (stand-in of the test control plane): only show is served" >&2
	exit 1
fi
shift
first=1
for unit in "$@"; do
	case "$unit" in -*) continue ;; esac
	[ "$first" = 1 ] || echo
	first=0
	echo "Id=$unit"
	if [ -f "$PODROLES_UNITS/$unit" ]; then
		cat "$PODROLES_UNITS/$unit"
	else
		printf 'LoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\nExecMainStartTimestampMonotonic=0\n'
	fi
done
`

// fakeCat stands in for cat in a pod of a role with secrets: the pod's
// /run/secrets is the local environment's folder of that pod's secrets,
// $PODROLES_SECRETS; other paths are the host's.
// The host's cat, found before the stand-in comes first on kwok's PATH,
// goes in for CAT.
const fakeCat = `#!/bin/sh
for arg; do
	shift
	case "$arg" in
	/run/secrets/*) set -- "$@" "${PODROLES_SECRETS:?this pod has no secrets}/${arg#/run/secrets/}" ;;
	*) set -- "$@" "$arg" ;;
	esac
done
exec CAT "$@"
`

// applyCRDs creates the CustomResourceDefinitions of YAML documents and
// waits until the API server serves them.
func (cp *ControlPlane) applyCRDs(ctx context.Context, docs []byte) error {
	client, err := cp.dynamic()
	if err != nil {
		return err
	}
	var names []string
	for _, doc := range bytes.Split(docs, []byte("\n---\n")) {
		var obj unstructured.Unstructured
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("kwok's CRDs: %w", err)
		}
		if _, err := client.Resource(crdResource).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
		}
		names = append(names, obj.GetName())
	}
	for _, name := range names {
		probe := poll.Probe{Endpoint: "CRD " + name, Expect: "Established", Within: 30 * time.Second}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			crd, err := client.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conditions {
				if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
			return poll.Saw("not established yet")
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) dynamic() (dynamic.Interface, error) {
	cfg, err := kube.Config(cp.Kubeconfig)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// PodBinding says what a fake pod answers with: where each of its ports
// leads (a local address "host:port"; ports left out are not served), the
// folder its /run/secrets reads, and the status file of the pod of the
// environment whose restarts it reports (MirrorStatus).
type PodBinding struct {
	Forwards   map[int32]string
	SecretsDir string
	StatusFile string
}

// Bindings gives the binding of the pod with index i (in name order) of a
// role.
type Bindings func(role string, i int) PodBinding

// BoundPod is a pod that Bind made answer.
type BoundPod struct {
	Namespace, Name, Role string
	// Units are the units the pod's systemd runs, from its units
	// annotation; nil for a pod of a service's image.
	Units []string
	PodBinding
	dir string
}

// Bind waits until every pod of the plan's Deployments runs, then makes
// each answer through kwok: exec in a pod of the node's image runs the
// fake systemctl over unit states of its own, where exactly the units of
// the pod's units annotation are active (as k8s-pod.nix would start them);
// each port forwards to the address its binding gives, and its
// /run/secrets is its binding's folder. It returns the pods by name.
func (cp *ControlPlane) Bind(ctx context.Context, p *plan.Plan, bindings Bindings) (map[string]*BoundPod, error) {
	client, err := cp.Client()
	if err != nil {
		return nil, err
	}
	dyn, err := cp.dynamic()
	if err != nil {
		return nil, err
	}
	bound := map[string]*BoundPod{}
	for _, d := range p.Deployments {
		var pods []corev1.Pod
		probe := poll.Probe{Endpoint: "Deployment " + d.Namespace + "/" + d.Name, Expect: fmt.Sprintf("%d Running pods", *d.Spec.Replicas), Within: time.Minute}
		err := poll.Eventually(ctx, probe, func(ctx context.Context) error {
			list, err := client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
			if err != nil {
				return err
			}
			pods = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil })
			if len(pods) != int(*d.Spec.Replicas) {
				return poll.Saw("%d Running", len(pods))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		role := d.Spec.Template.Labels[plan.LabelRole]
		for i, pod := range pods {
			b := &BoundPod{Namespace: pod.Namespace, Name: pod.Name, Role: role, dir: filepath.Join(cp.dir, "control-plane", "pods", pod.Namespace, pod.Name)}
			if bindings != nil {
				b.PodBinding = bindings(role, i)
			}
			if slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == plan.ContainerNode }) {
				b.Units = []string{}
				if a := pod.Annotations[plan.AnnotationUnits]; a != "" {
					b.Units = strings.Split(a, ",")
				}
			}
			if err := b.writeUnits(); err != nil {
				return nil, err
			}
			envs := []any{map[string]any{"name": "PODROLES_UNITS", "value": filepath.Join(b.dir, "units")}}
			if b.SecretsDir != "" {
				envs = append(envs, map[string]any{"name": "PODROLES_SECRETS", "value": b.SecretsDir})
			}
			if err := createKwokObject(ctx, dyn, execResource, "Exec", pod, map[string]any{"execs": []any{map[string]any{
				"local": map[string]any{"workDir": b.dir, "envs": envs},
			}}}); err != nil {
				return nil, err
			}
			var fw []any
			for port, addr := range b.Forwards {
				host, target, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, fmt.Errorf("forward of port %d of pod %s: %w", port, pod.Name, err)
				}
				targetPort, err := strconv.ParseInt(target, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("forward of port %d of pod %s: %q is no port", port, pod.Name, target)
				}
				fw = append(fw, map[string]any{"ports": []any{int64(port)}, "target": map[string]any{"address": host, "port": targetPort}})
			}
			if len(fw) > 0 {
				if err := createKwokObject(ctx, dyn, portForwardResource, "PortForward", pod, map[string]any{"forwards": fw}); err != nil {
					return nil, err
				}
			}
			bound[pod.Name] = b
		}
	}
	return bound, nil
}

// createKwokObject makes kwok's object of a kind for one pod, named as
// the pod, which is how kwok finds it.
func createKwokObject(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string, pod corev1.Pod, spec map[string]any) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": pod.Name, "namespace": pod.Namespace},
		"spec":     spec,
	}}
	if _, err := dyn.Resource(gvr).Namespace(pod.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s/%s: %w", kind, pod.Namespace, pod.Name, err)
	}
	return nil
}

// writeUnits writes the pod's unit states: its units active, others
// absent.
func (b *BoundPod) writeUnits() error {
	if err := os.MkdirAll(filepath.Join(b.dir, "units"), 0o755); err != nil {
		return err
	}
	for _, u := range b.Units {
		if err := b.SetUnit(u, true); err != nil {
			return err
		}
	}
	return nil
}

// SetUnit makes a unit active in the pod or never started there (a test
// breaks the placement of units on purpose).
func (b *BoundPod) SetUnit(unit string, active bool) error {
	path := filepath.Join(b.dir, "units", unit+".service")
	if !active {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return writeFile(path, []byte("Type=simple\nLoadState=loaded\nActiveState=active\nSubState=running\nResult=success\nExecMainStartTimestampMonotonic=4242\n"), 0o644)
}

// MirrorStatus reports, as a kubelet does, the restarts of each bound
// pod's environment pod as the restart count of the pod's first
// container (its service's), until ctx ends: the rotation suite then
// reads the restarts of a cluster's pods from their status.
func (cp *ControlPlane) MirrorStatus(ctx context.Context, pods map[string]*BoundPod) error {
	client, err := cp.Client()
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for name, b := range pods {
			if b.StatusFile == "" {
				continue
			}
			st, err := inventory.ReadPodStatus(b.StatusFile)
			if err != nil {
				continue // not written yet
			}
			pod, err := client.CoreV1().Pods(b.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				continue // tried again at the next tick
			}
			// The pod's own count is compared, not what was reported: a
			// status rewritten meanwhile is put right again.
			changed := false
			for i, c := range pod.Status.ContainerStatuses {
				if c.Name == pod.Spec.Containers[0].Name && c.RestartCount != int32(st.RestartCount) {
					pod.Status.ContainerStatuses[i].RestartCount = int32(st.RestartCount)
					changed = true
				}
			}
			if changed {
				// A conflict with kwok's own update is retried at the next
				// tick.
				client.CoreV1().Pods(b.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
