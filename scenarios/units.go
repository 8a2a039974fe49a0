package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/kube"
	"github.com/fediversity/podroles/internal/poll"
	"github.com/fediversity/podroles/plan"
	"github.com/fediversity/podroles/plan/names"
	"github.com/fediversity/podroles/scenarios/world"
)

// The units suite: in every pod of the node's image, each unit of the
// node's lists runs exactly where its list permits: a role's units only
// in that role's pods, mainUnits only in the main pod, sharedUnits in all
// (SC-001, US1-2, US1-3, US1-4). It finds the pods by their Deployments'
// own selectors, asks each pod's systemd through exec in the container
// the contract names (node), and shows the units × pods matrix. It reads
// systemd's record, not one instant: a one-time unit that ran to success
// ran; a unit whose timer, socket or path waits is armed, unless its last
// run failed; a unit skipped by its condition never ran, unless something
// active will start it while its conditions hold; a unit masked or
// removed while it runs runs. It waits for the pod's boot to end first,
// and then watches the running units for the patience: systemd must
// restart none of them (a loop that one look would take for a unit up).
var unitsSuite = &Suite{
	Name: "units",
	Doc:  "in every pod of the node's image, each unit runs exactly where its list permits, by systemd's record",
	Scenarios: []*Scenario{{
		Name:  "units-where-their-lists-permit",
		Spec:  []string{"SC-001", "US1-2", "US1-3", "US1-4"},
		Doc:   "role units only in the role's pods, mainUnits only in the main pod, sharedUnits in every pod, by systemd's record once the pod has booted (a one-time unit that ran, a unit its timer, socket or path will start, unless its last run failed; where its list forbids it, a unit that an active trigger or target will start while its conditions hold fails); then no running unit restarted by systemd while watched for the patience; shown as a units × pods matrix",
		Skip:  needsListedUnits,
		Uses:  []Capability{capDeployments, capExec},
		Steps: Checks(Check{Name: "ask each pod's systemd for each unit of the lists", Do: unitsWhereListsPermit}),
	}},
}

// unitProperties are what the suites ask systemctl show for.
const unitProperties = "Id,Type,LoadState,ActiveState,SubState,Result,ExecMainStartTimestampMonotonic,NRestarts,TriggeredBy,WantedBy,RequiredBy"

// triggerProperties are what the suites ask of a unit's triggers.
const triggerProperties = "Id,ActiveState"

// unitState is one block of `systemctl show`.
type unitState map[string]string

// ran says the unit is running, or is a one-time unit (Type=oneshot) that
// ran to success. A unit still starting, or restarting after a crash
// (activating), has not: the wait goes on.
func (u unitState) ran() bool {
	switch u["ActiveState"] {
	case "active", "reloading":
		return true
	}
	return u["Type"] == "oneshot" && u["ActiveState"] == "inactive" && u.started() && u["Result"] == "success"
}

// neverRan says the pod's systemd never started the unit. Its LoadState
// does not say: a unit masked or removed while it runs runs on.
func (u unitState) neverRan() bool {
	return u["ActiveState"] == "inactive" && !u.started()
}

// failedRun names how the unit's last run failed ("" if it did not): it
// is in the failed state, or it ran and stopped with another result than
// success. A trigger that will start it again does not undo that.
func (u unitState) failedRun() string {
	if u["ActiveState"] == "failed" || (u["ActiveState"] == "inactive" && u.started() && u["Result"] != "" && u["Result"] != "success") {
		return "Result=" + u["Result"]
	}
	return ""
}

// triggers are the units that start this one: its timer, socket or path.
func (u unitState) triggers() []string { return strings.Fields(u["TriggeredBy"]) }

// armedBy names the active trigger that will start the unit (a timer
// that has not elapsed, a socket no one connected to yet), or "".
func (u unitState) armedBy(triggers map[string]unitState) string {
	for _, t := range u.triggers() {
		if triggers[t]["ActiveState"] == "active" {
			return t
		}
	}
	return ""
}

// starters are the units that start this one: its triggers, and the
// targets that want or require it (a target starts them each time it is
// started, a pod's next boot among them).
func (u unitState) starters() []string {
	return slices.Concat(u.triggers(), strings.Fields(u["WantedBy"]), strings.Fields(u["RequiredBy"]))
}

// startedBy names the active starter that will start the unit, a trigger
// first, or "". Whether the unit then runs is up to its conditions.
func (u unitState) startedBy(starters map[string]unitState) string {
	for _, t := range u.starters() {
		if starters[t]["ActiveState"] == "active" {
			return t
		}
	}
	return ""
}

func (u unitState) started() bool {
	ts := u["ExecMainStartTimestampMonotonic"]
	return ts != "" && ts != "0"
}

func (u unitState) String() string {
	return fmt.Sprintf("LoadState=%s ActiveState=%s SubState=%s", u["LoadState"], u["ActiveState"], u["SubState"])
}

// parseSystemctlShow reads the blocks of `systemctl show UNIT...`, one per
// unit in the order asked, separated by blank lines.
func parseSystemctlShow(out []byte, units []string) ([]unitState, error) {
	var blocks []unitState
	block := unitState{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(block) > 0 {
				blocks = append(blocks, block)
				block = unitState{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("systemctl show printed %q, which is no property", line)
		}
		block[k] = v
	}
	if len(block) > 0 {
		blocks = append(blocks, block)
	}
	if len(blocks) != len(units) {
		return nil, fmt.Errorf("systemctl show printed %d units for the %d asked", len(blocks), len(units))
	}
	return blocks, nil
}

// showUnits asks a pod's systemd, through exec in its node container,
// for properties of units (full names), one state per unit in order.
func showUnits(ctx context.Context, c *world.Cluster, pod, properties string, units []string) ([]unitState, error) {
	out, err := c.Exec(ctx, c.Namespace, pod, plan.ContainerNode, append([]string{"systemctl", "show", "--property=" + properties, "--"}, units...))
	if err != nil {
		return nil, err
	}
	states, err := parseSystemctlShow(out, units)
	if err != nil {
		return nil, poll.Permanent(fmt.Errorf("pod %s: %w", pod, err))
	}
	return states, nil
}

// nodePod is a running pod of the node's image and the units its
// Deployment's plan permits it.
type nodePod struct {
	name, role string
	permitted  []string
}

// nodeImagePods lists the Running pods of each Deployment of the node's
// image (the main pod's, and each requested role's that runs no service),
// found by the cluster's Deployment's own selector, with the units the
// node's lists permit them.
func nodeImagePods(ctx context.Context, c *world.Cluster) ([]nodePod, error) {
	n := c.Node
	var out []nodePod
	for _, d := range c.Plan.Deployments {
		role, r := c.RoleOf(d)
		if !r.RunsNodeImage() {
			continue
		}
		permitted := n.PodRoles.MainUnits
		if role != names.MainRole {
			permitted = r.Units
		}
		permitted = append(slices.Clone(permitted), n.PodRoles.SharedUnits...)
		got, err := c.Clientset.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return nil, world.ObjectError("Deployment", d.Namespace, d.Name, "get", err)
		}
		pods, err := world.RunningPods(ctx, c.Clientset, got)
		if err != nil {
			return nil, err
		}
		if len(pods) == 0 {
			return nil, poll.Saw("%s, Deployment %s/%s", noRunningPod(role, int(*d.Spec.Replicas)), d.Namespace, d.Name)
		}
		for _, p := range pods {
			out = append(out, nodePod{name: p.Name, role: role, permitted: permitted})
		}
	}
	return out, nil
}

// judgeUnits asks each pod of the node's image for the state of units
// (unit → the list that places it, for the report) and returns every unit
// that ran where its pod's plan does not permit it, or did not run where
// it does, and the matrix of what it saw.
func judgeUnits(ctx context.Context, s *State, c *world.Cluster, units map[string]string) (matrix string, running []runningUnit, err error) {
	pods, err := nodeImagePods(ctx, c)
	if err != nil {
		return "", nil, err
	}
	names := slices.Sorted(maps.Keys(units))
	services := make([]string, len(names))
	for i, u := range names {
		services[i] = u + ".service"
	}
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "unit (list)")
	for _, p := range pods {
		fmt.Fprintf(tw, "\t%s (%s)", p.name, p.role)
	}
	fmt.Fprintln(tw)
	cells := make([][]string, len(names))
	var wrong []string
	for _, p := range pods {
		if err := booted(ctx, s, c, p.name); err != nil {
			return "", nil, err
		}
		states, err := showUnits(ctx, c, p.name, unitProperties, services)
		if err != nil {
			return "", nil, err
		}
		triggers, err := triggerStates(ctx, s, c, p.name, states)
		if err != nil {
			return "", nil, err
		}
		// A unit its list does not permit that never ran, but that an
		// active trigger or target will start: it runs there unless its
		// conditions keep it from running, which the pod's systemd says.
		var armed []string
		for i, u := range names {
			if !slices.Contains(p.permitted, u) && states[i].neverRan() && states[i].startedBy(triggers) != "" {
				armed = append(armed, u)
			}
		}
		willRun, err := conditionsHold(ctx, s, c, p.name, armed)
		if err != nil {
			return "", nil, err
		}
		for i, u := range names {
			at := placement(states[i], slices.Contains(p.permitted, u), slices.Contains(willRun, u), triggers)
			if at.did != "" {
				wrong = append(wrong, fmt.Sprintf("unit %s (%s) %s in pod %s of role %s, %s", u, units[u], at.did, p.name, p.role, at.why))
			}
			cells[i] = append(cells[i], at.cell)
			if at.cell == "active" {
				running = append(running, runningUnit{pod: p, unit: u, list: units[u], restarts: states[i]["NRestarts"]})
			}
		}
	}
	for i, u := range names {
		fmt.Fprintf(tw, "%s (%s)\t%s\n", u, units[u], strings.Join(cells[i], "\t"))
	}
	tw.Flush()
	matrix = strings.TrimRight(buf.String(), "\n")
	if len(wrong) > 0 {
		return matrix, nil, poll.Saw("%s", strings.Join(wrong, "; "))
	}
	return matrix, running, nil
}

// placed is a unit's cell of the matrix in one pod and, where that is
// wrong, what it did and why that is wrong there.
type placed struct {
	cell string
	// did is what the unit did ("ran"), "" where nothing is wrong; why
	// follows the pod's name.
	did, why string
}

// placement places a unit in one pod: permitted says its list puts it
// there, willRun that an active starter will start it while its
// conditions hold.
func placement(st unitState, permitted, willRun bool, triggers map[string]unitState) placed {
	const puts, forbids = "where its list puts it", "where its list does not permit it"
	switch {
	case permitted && st.ran() && st["ActiveState"] != "active":
		return placed{cell: "ran"}
	case permitted && st.ran():
		return placed{cell: "active"}
	case permitted && st.failedRun() != "":
		why := fmt.Sprintf("%s: its last run failed (%s, %s)", puts, st.failedRun(), st)
		if by := st.armedBy(triggers); by != "" {
			why += "; " + by + " will start it again, which does not undo the failed run"
		}
		return placed{"FAILED", "failed", why}
	case permitted && st.armedBy(triggers) != "":
		return placed{cell: "armed by " + st.armedBy(triggers)}
	case permitted:
		return placed{"NOT ACTIVE", "is not active", fmt.Sprintf("%s (%s)", puts, st)}
	case !st.neverRan():
		return placed{"WRONGLY " + st["ActiveState"], "ran", fmt.Sprintf("%s (%s)", forbids, st)}
	case willRun:
		by := st.startedBy(triggers)
		return placed{"WRONGLY armed by " + by, "will start", fmt.Sprintf("%s: %s is active and starts it, and its conditions hold there", forbids, by)}
	}
	return placed{cell: "-"}
}

// booted waits for the pod's systemd to end its boot: a unit not started
// yet while it boots proves nothing either way.
func booted(ctx context.Context, s *State, c *world.Cluster, pod string) error {
	out, err := c.Exec(ctx, c.Namespace, pod, plan.ContainerNode, []string{"systemctl", "show", "--property=SystemState"})
	if err != nil {
		return err
	}
	return bootEnded(pod, out)
}

// bootEnded reads `systemctl show --property=SystemState`: a system still
// initializing or starting has not answered yet, and is waited out to the
// scenario's deadline, not the step's patience: a loaded machine boots
// slowly.
func bootEnded(pod string, out []byte) error {
	state, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "SystemState=")
	switch {
	case !ok:
		return poll.Permanent(fmt.Errorf("pod %s: systemctl show printed %q, not the system's state", pod, out))
	case state == "initializing" || state == "starting":
		return poll.NoAnswer(poll.Saw("pod %s still booting (systemd is %s)", pod, state))
	}
	return nil
}

// conditionsHold asks the pod's systemd which of units would run if
// started now: their conditions and asserts, as their files on disk say
// (a drop-in that cleared a condition counts), evaluated by
// systemd-analyze. Without systemd-analyze in the image the suite cannot
// tell, and says so.
func conditionsHold(ctx context.Context, s *State, c *world.Cluster, pod string, units []string) ([]string, error) {
	if len(units) == 0 {
		return nil, nil
	}
	const noAnalyze = 3 // the script's status where the image has none
	const script = `command -v systemd-analyze >/dev/null || exit 3
for u; do systemd-analyze condition --unit="$u.service" >/dev/null 2>&1 && echo "$u"; done; true`
	out, err := c.Exec(ctx, c.Namespace, pod, plan.ContainerNode, append([]string{"sh", "-c", script, "sh"}, units...))
	var exit *kube.ExitError
	switch {
	case errors.As(err, &exit) && exit.Status == noAnalyze, kube.CommandMissing(err):
		return nil, inconclusive("pod %s: the node's image has no systemd-analyze (or no shell), so the suite cannot tell whether what starts units %s would run them there", pod, strings.Join(units, ", "))
	case err != nil:
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// triggerStates asks the pod's systemd for the state of the units that
// start the units of states (their timers, sockets and paths, and the
// targets that want them).
func triggerStates(ctx context.Context, s *State, c *world.Cluster, pod string, states []unitState) (map[string]unitState, error) {
	var names []string
	for _, st := range states {
		for _, t := range st.starters() {
			if !slices.Contains(names, t) {
				names = append(names, t)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	got, err := showUnits(ctx, c, pod, triggerProperties, names)
	if err != nil {
		return nil, err
	}
	byName := map[string]unitState{}
	for i, n := range names {
		byName[n] = got[i]
	}
	return byName, nil
}

// listedUnits maps each unit of the node's lists to the list: the units
// of the requested roles of the node's image, mainUnits and sharedUnits.
func listedUnits(n *facts.Node) map[string]string {
	units := map[string]string{}
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if role.Requested() && role.RunsNodeImage() {
			for _, u := range role.Units {
				units[u] = "role " + r
			}
		}
	}
	for _, u := range n.PodRoles.MainUnits {
		units[u] = "mainUnits"
	}
	for _, u := range n.PodRoles.SharedUnits {
		units[u] = "sharedUnits"
	}
	return units
}

// serviceUnits maps the unit of each modular service that a requested
// role runs from the service's image to that role.
func serviceUnits(n *facts.Node) map[string]string {
	units := map[string]string{}
	for _, r := range n.RoleNames() {
		role := n.PodRoles.Roles[r]
		if role.Requested() && !role.RunsNodeImage() {
			units[*role.Service] = "service of role " + r
		}
	}
	return units
}

// needsUnits makes the Skip of a scenario that asks the pods of the
// node's image for the units that units picks from the node: it cannot
// run without a cluster, and has nothing to judge where the node has no
// such unit (none says why, after the node's name).
func needsUnits(units func(*facts.Node) map[string]string, none string) func(world.World) string {
	return func(w world.World) string {
		inv := w.Inventory()
		if why := needsCluster(w); why != "" {
			return why
		}
		if inv.Facts != nil && len(units(inv.Facts)) == 0 {
			return "node " + inv.Node + " " + none
		}
		return ""
	}
}

var (
	needsListedUnits  = needsUnits(listedUnits, "lists no units (no role of the node's image, mainUnits nor sharedUnits has one): none to place")
	needsServiceUnits = needsUnits(serviceUnits, "has no role that runs a service's image: no unit of a service to look for")
)

func unitsWhereListsPermit(ctx context.Context, s *State) error {
	c, err := clusterOf(s)
	if err != nil {
		return err
	}
	running, err := judgeMatrix(ctx, s, c, listedUnits(c.Node), "each listed unit active exactly in the pods its list permits")
	if err != nil {
		return err
	}
	return staysUp(ctx, s, c, running)
}

// nodeImagePodsWhere names the pods the units suites ask, for a report.
func nodeImagePodsWhere(s *State, c *world.Cluster) string {
	return fmt.Sprintf("the pods of node %s's image in namespace %s", s.Inv.Node, c.Namespace)
}

// judgeMatrix waits until the pods' units are as their lists say, notes
// the matrix it saw last, and returns the units it saw running where
// their lists put them.
func judgeMatrix(ctx context.Context, s *State, c *world.Cluster, units map[string]string, expect string) ([]runningUnit, error) {
	var matrix string
	var running []runningUnit
	probe := poll.Probe{Endpoint: nodeImagePodsWhere(s, c), Expect: expect, Within: s.Patience}
	err := poll.Eventually(ctx, probe, func(ctx context.Context) (err error) {
		var m string
		m, running, err = judgeUnits(ctx, s, c, units)
		if m != "" {
			matrix = m
		}
		return err
	})
	if matrix != "" {
		s.Note("units × pods:\n%s", matrix)
	}
	return running, err
}

// runningUnit is a unit seen running in a pod where its list puts it,
// and how often systemd had restarted it then (NRestarts).
type runningUnit struct {
	pod        nodePod
	unit, list string
	restarts   string
}

// staysUp watches the running units for the patience: one that systemd
// restarts meanwhile (its Restart= after a crash, or a RuntimeMaxSec) is
// in a loop that one look, at a moment it runs, takes for a unit up.
// NRestarts keeps count between two looks.
func staysUp(ctx context.Context, s *State, c *world.Cluster, running []runningUnit) error {
	if len(running) == 0 {
		return nil
	}
	byPod := map[string][]runningUnit{}
	for _, r := range running {
		byPod[r.pod.name] = append(byPod[r.pod.name], r)
	}
	pods := slices.Sorted(maps.Keys(byPod))
	probe := poll.Probe{Endpoint: nodeImagePodsWhere(s, c), Expect: fmt.Sprintf("no restart of the %d units running where their lists put them", len(running)), Within: s.Patience}
	err := poll.Consistently(ctx, probe, func(ctx context.Context) error {
		for _, pod := range pods {
			units := byPod[pod]
			services := make([]string, len(units))
			for i, r := range units {
				services[i] = r.unit + ".service"
			}
			states, err := showUnits(ctx, c, pod, "Id,NRestarts", services)
			if err != nil {
				return err
			}
			var restarted []string
			for i, r := range units {
				if now := states[i]["NRestarts"]; now != r.restarts {
					restarted = append(restarted, fmt.Sprintf("unit %s (%s) restarted in pod %s of role %s, where its list puts it: systemd restarted it while watched (NRestarts %s, then %s)", r.unit, r.list, pod, r.pod.role, r.restarts, now))
				}
			}
			if len(restarted) > 0 {
				return poll.Saw("%s", strings.Join(restarted, "; "))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.Note("watched %d running units in %d pods for %s: systemd restarted none", len(running), len(pods), s.Patience)
	return nil
}
