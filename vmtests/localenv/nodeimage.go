package localenv

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/vmtests/kubenode"
)

// The pods of a node's image on the real node run a stand-in of the
// node's image: Debian with systemd as PID 1 (the node base, make images)
// and, on top, one unit for each unit of the node that does nothing but
// stay active. As k8s-pod.nix does, each unit of the node's lists starts
// only in the pods its list permits, by a systemd condition: a pod knows
// its role by the file /etc/podrole/ROLE, which its Deployment puts there
// (a downward-API volume whose one item the Deployment names after the
// role). (ConditionEnvironment= cannot do it: the system manager does not
// see a container's variables as its own environment.)

// PodRoleDir is where a pod of the node's image finds its role: a file
// named after it.
const PodRoleDir = "/etc/podrole"

// unitsDir is where the node's units go in its image.
const unitsDir = "etc/systemd/system"

// nodeUnitPods maps each unit of the node's lists to the roles whose pods
// may run it: the main pod its mainUnits and the sharedUnits, each
// requested role of the node's image its units and the sharedUnits.
func nodeUnitPods(n *facts.Node) map[string][]string {
	pods := map[string][]string{}
	add := func(role string, units []string) {
		for _, u := range units {
			if !slices.Contains(pods[u], role) {
				pods[u] = append(pods[u], role)
			}
		}
	}
	add(plan.MainRole, n.PodRoles.MainUnits)
	add(plan.MainRole, n.PodRoles.SharedUnits)
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if role.Requested() && role.RunsNodeImage() {
			add(r, role.Units)
			add(r, n.PodRoles.SharedUnits)
		}
	}
	return pods
}

// nodeUnit is the stand-in of a unit: active until stopped, in the pods
// whose role is one of roles (in every pod with none: a unit of the
// platform, in no list).
func nodeUnit(node, unit string, roles []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=Stand-in of unit %s of node %s: it does nothing but stay active\n", unit, node)
	if len(roles) > 0 {
		fmt.Fprintf(&b, "# Only in the pods its list permits; a pod's role is a file in %s.\n", PodRoleDir)
		for _, r := range slices.Sorted(slices.Values(roles)) {
			fmt.Fprintf(&b, "ConditionPathExists=|%s/%s\n", PodRoleDir, r)
		}
	}
	b.WriteString("\n[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n")
	return b.String()
}

// NodeImage is the stand-in image of node n on top of the node base (an
// OCI archive of it, base): a unit file for each of the node's units,
// wanted by multi-user.target where the unit is enabled. A unit that is
// switched off (a modular service's, which its role runs) is there but
// never started, as on the node.
func NodeImage(n *facts.Node, baseRef, baseArchive string) kubenode.Image {
	pods := nodeUnitPods(n)
	files := []kubenode.File{{Name: "etc", Mode: 0o755, Dir: true}, {Name: "etc/systemd", Mode: 0o755, Dir: true},
		{Name: unitsDir, Mode: 0o755, Dir: true}, {Name: unitsDir + "/multi-user.target.wants", Mode: 0o755, Dir: true}}
	h := sha256.New()
	fmt.Fprintln(h, baseRef)
	for _, u := range slices.Sorted(maps.Keys(n.Units)) {
		name := u + ".service"
		unit := nodeUnit(n.Name, u, pods[u])
		fmt.Fprintln(h, name, unit, n.Units[u].Enable)
		files = append(files, kubenode.File{Name: unitsDir + "/" + name, Mode: 0o644, Data: []byte(unit)})
		if n.Units[u].Enable {
			files = append(files, kubenode.File{Name: unitsDir + "/multi-user.target.wants/" + name, Symlink: "/" + unitsDir + "/" + name})
		}
	}
	return kubenode.Image{
		Ref:   fmt.Sprintf("podroles.local/node-%s:%x", n.Name, h.Sum(nil)[:6]),
		Base:  baseArchive,
		Files: files,
	}
}
