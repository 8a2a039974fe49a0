package localenv

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/harness/kubenode"
	"github.com/fediversity/podroles/plan/names"
)

// The pods of a node's image on the real node run a stand-in of the
// node's image. Its base is Debian with systemd as PID 1 (the node base,
// make images). On top, it has one unit for each unit of the node: a
// one-time unit, a unit a timer starts or a unit that requires others
// where the bundled examples' NixOS modules make them so (unitKinds), else
// a unit that does nothing but stay active.
//
// As k8s-pod.nix does, each unit of the node's lists starts only in the
// pods its list permits, by a systemd condition. A pod knows its role by
// the file /etc/podrole/ROLE, which its Deployment puts there (a
// downward-API volume whose one item is named after the role).
// ConditionEnvironment= cannot do it: the system manager does not see a
// container's variables as its own environment.

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
	add(names.MainRole, n.PodRoles.MainUnits)
	add(names.MainRole, n.PodRoles.SharedUnits)
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if role.Requested() && role.RunsNodeImage() {
			add(r, role.Units)
			add(r, n.PodRoles.SharedUnits)
		}
	}
	return pods
}

// unitKind is how the stand-in image runs a unit.
type unitKind struct {
	// oneshot units run once to success and end.
	oneshot bool
	// timer, when set, is the [Timer] section of the timer that starts
	// the unit, which nothing else starts.
	timer string
	// requires are units the unit requires, as its NixOS module says.
	requires []string
	// agent: the platform's OpenBao agent, which runs for real in a pod
	// given its configuration (the main pod, for the reader's password).
	agent bool
	// publisher: lldap-publish-roles, whose stand-in (rolepublisher)
	// runs in a pod given its configuration (the main pod).
	publisher bool
}

// unitKinds are the units of the bundled examples that the stand-in
// image runs as their NixOS modules make them: the units suite must judge
// one-time units, units a timer starts (one fires soon, one not for a
// day), and the spec's first edge case (a role's unit that requires a
// unit of the main pod, skipped there by its condition). Every other
// unit stays active.
var unitKinds = map[string]unitKind{
	"mastodon-init-dirs":                    {oneshot: true},
	"mastodon-init-db":                      {oneshot: true, requires: []string{"mastodon-init-dirs"}},
	"mastodon-media-auto-remove":            {oneshot: true, timer: "OnActiveSec=2s"},
	"acme-order-renew-mastodon.example.org": {oneshot: true, timer: "OnActiveSec=1d"},
	"mastodon-sidekiq-all":                  {requires: []string{"mastodon-init-dirs"}},
	"openbao-agent":                         {agent: true},
	publishRolesUnit:                        {publisher: true},
}

// Where a pod of the node's image finds its OpenBao agent: Vault's static
// program from the host, and the configuration its Deployment mounts.
const (
	nodeAgentProgram = "/podroles/bao"
	nodeAgentConfig  = agentDir + "/agent.json"
	// publishRolesConfig is the configuration of the stand-in of
	// lldap-publish-roles, beside the agent's.
	publishRolesConfig = agentDir + "/publish-roles.json"
)

// nodeUnit is the stand-in of a unit, as unitKinds says or else active
// until stopped, in the pods whose role is one of roles (in every pod
// with none: a unit of the platform, in no list). A timer carries no
// condition: as on the node, it fires everywhere, and the unit's own
// condition keeps it from running where its list does not permit it.
func nodeUnit(node, unit string, roles []string) string {
	kind := unitKinds[unit]
	var b strings.Builder
	fmt.Fprintf(&b, "[Unit]\nDescription=Stand-in of unit %s of node %s\n", unit, node)
	for _, r := range kind.requires {
		fmt.Fprintf(&b, "Requires=%[1]s.service\nAfter=%[1]s.service\n", r)
	}
	if len(roles) > 0 {
		fmt.Fprintf(&b, "# Only in the pods its list permits; a pod's role is a file in %s.\n", PodRoleDir)
		for _, r := range slices.Sorted(slices.Values(roles)) {
			fmt.Fprintf(&b, "ConditionPathExists=|%s/%s\n", PodRoleDir, r)
		}
	}
	switch {
	case kind.oneshot:
		b.WriteString("\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
	case kind.agent:
		// A pod with no configuration has nothing to render: the unit
		// stays active, as everywhere else.
		fmt.Fprintf(&b, "\n[Service]\nExecStart=/bin/sh -c 'if [ -e %[1]s ]; then exec %[2]s agent -config=%[1]s; fi; exec sleep infinity'\nEnvironment=HOME=/tmp\nRestart=always\nRestartSec=1\n", nodeAgentConfig, nodeAgentProgram)
	case kind.publisher:
		// It tries again on its own while the directory does not
		// answer, and never fails: the spec's unit waits with no failed
		// state (US2-11). Where nothing configures it, it stays active.
		fmt.Fprintf(&b, "StartLimitIntervalSec=0\n\n[Service]\nExecStart=/bin/sh -c 'if [ -e %[1]s ]; then exec %[2]s/podroles publish-roles --config=%[1]s; fi; exec sleep infinity'\nRestart=always\nRestartSec=1\n", publishRolesConfig, podrolesDir)
	default:
		b.WriteString("\n[Service]\nExecStart=/bin/sleep infinity\n")
	}
	if kind.timer == "" {
		b.WriteString("\n[Install]\nWantedBy=multi-user.target\n")
	}
	return b.String()
}

// nodeTimer is the timer that starts a unit of unitKinds.
func nodeTimer(node, unit string) string {
	return fmt.Sprintf("[Unit]\nDescription=Timer of unit %s of node %s\n\n[Timer]\n%s\n\n[Install]\nWantedBy=timers.target\n", unit, node, unitKinds[unit].timer)
}

// NodeImage is the stand-in image of node n on top of the node base (an
// OCI archive of it, base): a unit file for each of the node's units,
// wanted by multi-user.target where the unit is enabled. A unit that is
// switched off (a modular service's, which its role runs) is there but
// never started, as on the node.
func NodeImage(n *facts.Node, baseRef, baseArchive string) kubenode.Image {
	pods := nodeUnitPods(n)
	files := []kubenode.File{{Name: "etc", Mode: 0o755, Dir: true}, {Name: "etc/systemd", Mode: 0o755, Dir: true},
		{Name: unitsDir, Mode: 0o755, Dir: true}, {Name: unitsDir + "/multi-user.target.wants", Mode: 0o755, Dir: true},
		{Name: unitsDir + "/timers.target.wants", Mode: 0o755, Dir: true}}
	h := sha256.New()
	fmt.Fprintln(h, baseRef)
	for _, u := range slices.Sorted(maps.Keys(n.Units)) {
		name := u + ".service"
		unit := nodeUnit(n.Name, u, pods[u])
		fmt.Fprintln(h, name, unit, n.Units[u].Enable)
		files = append(files, kubenode.File{Name: unitsDir + "/" + name, Mode: 0o644, Data: []byte(unit)})
		if !n.Units[u].Enable {
			continue
		}
		if unitKinds[u].timer == "" {
			files = append(files, kubenode.File{Name: unitsDir + "/multi-user.target.wants/" + name, Symlink: "/" + unitsDir + "/" + name})
			continue
		}
		timer, text := u+".timer", nodeTimer(n.Name, u)
		fmt.Fprintln(h, timer, text)
		files = append(files, kubenode.File{Name: unitsDir + "/" + timer, Mode: 0o644, Data: []byte(text)},
			kubenode.File{Name: unitsDir + "/timers.target.wants/" + timer, Symlink: "/" + unitsDir + "/" + timer})
	}
	return kubenode.Image{
		Ref:   fmt.Sprintf("podroles.local/node-%s:%x", n.Name, h.Sum(nil)[:6]),
		Base:  baseArchive,
		Files: files,
	}
}
