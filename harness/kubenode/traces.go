package kubenode

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// nodePrograms are the programs of a node, by the name of their
// executable.
// (runc is not one of them: podman runs it too; a container's runc is in
// the node's cgroups.)
var nodePrograms = []string{"containerd", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "coredns", "podroles-pause"}

// Traces lists what of a kubelet node is on the machine now, one line
// each, sorted: processes of the node's programs and processes in its
// cgroups, mounts of the kubelet and containerd, the node's links, routes
// and addresses of its range, kube-proxy's nftables tables, its cgroups,
// its fixed paths, and the values of the sysctls it changes.
// Taken before a node starts and after it stopped, the two lists must be
// equal: the node left the machine as it found it.
func Traces() []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		// A zombie is dead already, waiting for its parent (the machine's
		// init, for an orphan) to reap it.
		if st := statFields(pid); len(st) == 0 || st[0] == "Z" || st[0] == "X" {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		cgroup, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if slices.Contains(nodePrograms, filepath.Base(exe)) || strings.Contains(string(cgroup), "/kubepods") {
			out = append(out, fmt.Sprintf("process %d %s", pid, exe))
		}
	}
	mounts, _ := readMounts()
	for _, m := range mounts {
		if strings.Contains(m.point, "kubelet") || strings.Contains(m.point, "containerd") || strings.Contains(m.point, "kubepods") {
			out = append(out, fmt.Sprintf("mount %s (%s)", m.point, m.fstype))
		}
	}
	for _, link := range []string{NodeBridge, PodBridge} {
		if _, err := os.Stat(filepath.Join("/sys/class/net", link)); err == nil {
			out = append(out, "link "+link)
		}
	}
	for _, r := range rangeRoutes() {
		out = append(out, "route "+r)
	}
	for _, t := range nftTables() {
		out = append(out, "nftables table "+t)
	}
	for _, h := range cgroupHierarchies() {
		for _, cg := range nodeCgroups {
			if _, err := os.Stat(filepath.Join(h, cg)); err == nil {
				out = append(out, "cgroup "+filepath.Join(h, cg))
			}
		}
	}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, "path "+p)
		}
	}
	for _, name := range touchedSysctls {
		v, _ := readSysctl(name)
		out = append(out, fmt.Sprintf("sysctl %s = %s", name, v))
	}
	slices.Sort(out)
	return out
}

// rangeRoutes are the host's routes (every table: the local one holds
// its addresses) to or from an address of the node's range.
func rangeRoutes() []string {
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return []string{"(ip route: " + err.Error() + ")"}
	}
	within := netip.MustParsePrefix(Range)
	var routes []string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if slices.ContainsFunc(fields, func(f string) bool {
			p, err := netip.ParsePrefix(f)
			if err != nil {
				a, err := netip.ParseAddr(f)
				return err == nil && within.Contains(a)
			}
			return within.Overlaps(p)
		}) {
			routes = append(routes, strings.Join(fields, " "))
		}
	}
	return routes
}

// TracesDiff says how after differs from before, a line each: + for a
// trace that appeared, - for one that went.
func TracesDiff(before, after []string) []string {
	var diff []string
	for _, t := range after {
		if !slices.Contains(before, t) {
			diff = append(diff, "+ "+t)
		}
	}
	for _, t := range before {
		if !slices.Contains(after, t) {
			diff = append(diff, "- "+t)
		}
	}
	return diff
}

// CleanTraces takes the machine's node lock, undoes what a dead run left,
// and returns the machine's traces then, with no node on it: what the
// traces must be again once a node has stopped.
func CleanTraces(ctx context.Context, wait time.Duration) ([]string, error) {
	lock, err := takeMachine(ctx, "", wait)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	return Traces(), nil
}

// leftovers are the traces of a node that are no setting: processes,
// mounts, links, cgroups.
func leftovers() []string {
	return slices.DeleteFunc(Traces(), func(t string) bool {
		return strings.HasPrefix(t, "sysctl ") || strings.HasPrefix(t, "path ")
	})
}

// MountsUnder lists what is mounted in dir: a folder of a node that did
// not stop cleanly, which must not be removed (what is mounted there
// would go with it).
func MountsUnder(dir string) []string {
	mounts, _ := readMounts()
	var out []string
	for _, m := range mounts {
		if under(m.point, dir) {
			out = append(out, m.point)
		}
	}
	return out
}
