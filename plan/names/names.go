// Package names says how the plan names a node's objects and labels.
//
// The rules of package checks compare the names and selectors that
// `podroles plan` makes across nodes; they read them here, so that the
// checker links none of the Kubernetes types that package plan builds.
// The names are those of node-surface's "Names Kubernetes sees".
package names

import "github.com/fediversity/podroles/facts"

// The labels the plan puts on a node's Deployments, Services and pods.
const (
	LabelNode = "podroles.fediversity.eu/node"
	LabelRole = "podroles.fediversity.eu/role"
	// MainRole is the role label of the main pod.
	MainRole = "main"
)

// MainName is the name of the Deployment of the main pod of node.
func MainName(node string) string { return node }

// RoleName is the name of the Deployment of role of node, and of the
// role's Service.
func RoleName(node, role string) string { return node + "-" + role }

// Labels are the labels of the pods of role of node, by which its
// Deployment and Service select them. The main pod's role is MainRole.
func Labels(node, role string) map[string]string {
	return map[string]string{LabelNode: node, LabelRole: role}
}

// HasService reports whether the plan makes a Service for a requested
// role: only for one with ports or a metrics port. It builds no ports,
// so that the rules can ask it of every role for next to nothing.
func HasService(r facts.Role) bool { return len(r.Ports) > 0 || r.Metrics != nil }
