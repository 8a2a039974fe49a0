package kubenode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fediversity/podroles/harness/procgroup"
	"github.com/fediversity/podroles/internal/statefile"
)

// A kubelet and containerd are not contained in a folder: the kubelet
// changes sysctls of the whole machine, makes cgroups at the root of every
// hierarchy and files at fixed paths, and containerd's shims and the
// pods' processes outlive both. So one node runs per machine, under a
// machine-wide lock, and every change is written down in the host state
// BEFORE it is made: whoever takes the lock next undoes what a run that
// died (killed, or its machine's power cut) left behind, from that
// record, as the containers provider sweeps a dead owner's containers.

// HostStateDir holds the machine's node lock and the record of what the
// node changed. Not in /run: the record must outlive a reboot, since the
// fixed paths the kubelet makes do.
const HostStateDir = "/var/tmp/podroles-node"

// hostState is what a node changed on the machine.
type hostState struct {
	// Owner is the process that started the node: a test binary, which
	// holds the lock while it runs, or podroles env up.
	Owner procgroup.Proc `json:"owner"`
	// Detached nodes (env up) outlive their owner; their processes say
	// whether they still run, and StopHint how to stop them.
	Detached bool   `json:"detached"`
	StopHint string `json:"stopHint,omitempty"`
	// Dir is the node's folder: containerd's root, state and socket, the
	// kubelet's root.
	Dir   string            `json:"dir"`
	Procs []*procgroup.Proc `json:"procs"`
	// Links are the links the node made (its bridges); the node's
	// addresses and routes go with them.
	Links []string `json:"links"`
	// NFTables are the nftables tables of the node's kube-proxy, as
	// "FAMILY NAME".
	NFTables []string `json:"nftables,omitempty"`
	// Sysctls are the values of the sysctls the node changes, from before.
	Sysctls map[string]string `json:"sysctls"`
	// Paths are the fixed host paths that did not exist before the node.
	Paths []string `json:"paths"`
	// Before is the machine's traces before the node (Traces).
	Before []string `json:"before"`
}

// touchedSysctls are the sysctls the kubelet sets at its start (and has
// no switch to leave alone: protectKernelDefaults makes it refuse to
// start instead), and the IP forwarding that CNI's bridge plugin turns on
// for a gateway.
var touchedSysctls = []string{
	"vm.overcommit_memory", "vm.panic_on_oom", "kernel.panic", "kernel.panic_on_oops",
	"kernel.keys.root_maxkeys", "kernel.keys.root_maxbytes", "net.ipv4.ip_forward",
}

// fixedPaths are where the kubelet and containerd write whatever folder
// they are given: the kubelet's device-plugin socket, volume plugins and
// container log links, containerd 1.6's shim sockets, containerd's opt
// folder. Only the node uses them (there is one kubelet and one
// containerd per machine), so a path the node made goes whole.
// (Network namespaces stay under containerd's state, not in /run/netns,
// which podman uses too.)
var fixedPaths = []string{
	"/var/lib/kubelet", "/usr/libexec/kubernetes", "/var/log/containers", "/var/log/pods",
	"/run/containerd", "/opt/containerd", "/var/lib/containerd", "/etc/kubernetes",
}

// cniCache is libcni's cache, which other CNI users (podman with CNI)
// share: only the node's network's entries go, and the folders they
// leave empty.
const cniCache = "/var/lib/cni"

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// nodeCgroups are the cgroups the kubelet makes at the root of each
// hierarchy (kubepods), and containerd's own namespace's (k8s.io, for
// containers run outside the CRI).
var nodeCgroups = []string{"kubepods", "k8s.io"}

func sysctlPath(name string) string {
	return filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/"))
}

func readSysctl(name string) (string, error) {
	b, err := os.ReadFile(sysctlPath(name))
	return strings.TrimSpace(string(b)), err
}

// hostLock is the machine-wide lock of the node.
type hostLock struct{ f *os.File }

// errNodeBusy says the machine's node is someone else's.
var errNodeBusy = errors.New("the machine's node is in use")

// lockHost takes the machine's node lock, waiting up to wait for whoever
// holds it; ctx ends the wait too.
func lockHost(ctx context.Context, wait time.Duration) (*hostLock, error) {
	if err := os.MkdirAll(HostStateDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(HostStateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &hostLock{f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if time.Now().After(deadline) {
			f.Close()
			s, _ := readHostState()
			if running := s.runningDetached(); running != "" {
				return nil, fmt.Errorf("%w: %s", errNodeBusy, running)
			}
			who := "another process"
			if s != nil {
				who = fmt.Sprintf("process %d (%s), with its node in %s", s.Owner.PID, s.Owner.Name, s.Dir)
			}
			return nil, fmt.Errorf("%w: %s holds %s (waited %s)", errNodeBusy, who, f.Name(), wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (l *hostLock) release() {
	if l != nil && l.f != nil {
		l.f.Close() // closing the last descriptor releases the lock
		l.f = nil
	}
}

func hostStatePath() string { return filepath.Join(HostStateDir, "state.json") }

// readHostState reads the record of the last node, or nil when none is
// left: the last one was undone.
func readHostState() (*hostState, error) {
	data, err := os.ReadFile(hostStatePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s hostState
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w: look at what it names, undo it by hand, and remove it", hostStatePath(), err)
	}
	return &s, nil
}

// save writes the record, atomically: a run killed while writing leaves
// the previous record whole.
func (s *hostState) save() error {
	return statefile.WriteJSON(hostStatePath(), s, 0o600)
}

// runningDetached says which detached node (env up's) runs, with its
// processes and how to stop it; "" where none does.
func (s *hostState) runningDetached() string {
	if s == nil || !s.Detached {
		return ""
	}
	running := s.running()
	if len(running) == 0 {
		return ""
	}
	return fmt.Sprintf("the node in %s runs (%s): %s", s.Dir, strings.Join(running, ", "), s.StopHint)
}

// running lists the recorded processes that still run.
func (s *hostState) running() []string {
	var out []string
	for _, p := range s.Procs {
		if p.Running() {
			out = append(out, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
		}
	}
	return out
}

// newHostState records the machine as it is before a node in dir starts,
// and refuses a machine where another kubelet's traces are.
func newHostState(dir string, detached bool) (*hostState, error) {
	self := procgroup.Proc{Name: filepath.Base(os.Args[0]), PID: os.Getpid(), StartTime: procgroup.StartTime(os.Getpid())}
	s := &hostState{Owner: self, Detached: detached, Dir: dir, Sysctls: map[string]string{}, Links: []string{PodBridge, NodeBridge},
		NFTables: slices.Clone(kubeProxyTables)}
	for _, name := range touchedSysctls {
		v, err := readSysctl(name)
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", name, err)
		}
		s.Sysctls[name] = v
	}
	for _, p := range append(slices.Clone(fixedPaths), cniCache) {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			s.Paths = append(s.Paths, p)
		}
	}
	for _, link := range s.Links {
		if _, err := os.Stat(filepath.Join("/sys/class/net", link)); err == nil {
			return nil, fmt.Errorf("link %s exists, and no record of a podroles node says it made it: remove it (ip link del %s) once nothing uses it", link, link)
		}
	}
	if tables := nftTables(); len(tables) > 0 {
		return nil, fmt.Errorf("nftables table %s exists: another kube-proxy runs on this machine, or one that podroles did not start left it (nft delete table %s once nothing uses it)", tables[0], tables[0])
	}
	for _, h := range cgroupHierarchies() {
		for _, cg := range nodeCgroups {
			if _, err := os.Stat(filepath.Join(h, cg)); err == nil {
				return nil, fmt.Errorf("cgroup %s exists: another kubelet or containerd runs on this machine, or one that podroles did not start left it", filepath.Join(h, cg))
			}
		}
	}
	return s, nil
}

// cgroupHierarchies are the mounted cgroup hierarchies (v1 controllers,
// named ones, and the unified one of a hybrid layout).
func cgroupHierarchies() []string {
	var out []string
	mounts, _ := readMounts()
	for _, m := range mounts {
		if (m.fstype == "cgroup" || m.fstype == "cgroup2") && strings.HasPrefix(m.point, cgroupRoot) {
			out = append(out, m.point)
		}
	}
	return out
}

// mount is a line of /proc/self/mountinfo.
type mount struct{ point, fstype string }

func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) {
			continue
		}
		out = append(out, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1]})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// under says p is root or inside it.
func under(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// undo undoes everything the record names, in the order that lets each
// step succeed: processes (the recorded ones, the shims of the node's
// containerd, the pods' processes in the node's cgroups), kube-proxy's
// tables, mounts, links (with the node's addresses and routes), cgroups,
// sysctls, the fixed paths the node made. It goes on after a step fails,
// and returns every failure.
func (s *hostState) undo() error {
	var errs []error
	for i := len(s.Procs) - 1; i >= 0; i-- {
		errs = append(errs, s.Procs[i].Stop(10*time.Second))
	}
	errs = append(errs, s.killPods(), s.deleteTables(), s.unmount(), s.deleteLinks(), s.removeCgroups(), s.restoreSysctls(), s.removeLogLinks(), removeCNICache())
	for _, p := range s.Paths {
		if p == cniCache {
			removeEmptyDirs(p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("remove %s, which the node made: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// killPods kills the pods' processes (every process in the node's
// cgroups) and the shims of the node's containerd, which name its socket.
func (s *hostState) killPods() error {
	socket := containerdSocket(s.Dir)
	pids := func() []int {
		var out []int
		for _, h := range cgroupHierarchies() {
			for _, cg := range nodeCgroups {
				filepath.WalkDir(filepath.Join(h, cg), func(p string, d os.DirEntry, err error) error {
					if err != nil || !d.IsDir() {
						return nil
					}
					data, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
					for _, f := range strings.Fields(string(data)) {
						if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
							out = append(out, pid)
						}
					}
					return nil
				})
			}
		}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			args := strings.Split(string(cmdline), "\x00")
			if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") && slices.Contains(args, socket) && !slices.Contains(out, pid) {
				out = append(out, pid)
			}
		}
		return out
	}
	left := pids()
	if len(left) == 0 {
		return nil
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if waitGone(func() bool { left = pids(); return len(left) > 0 }, 10*time.Second) {
		return nil
	}
	return fmt.Errorf("processes of the node's pods still run after SIGKILL: %v", left)
}

// unmount unmounts whatever is mounted in the node's folder or in a fixed
// path the node made (the kubelet's bind mount of its root, the pods'
// volumes, containers' root file systems, network namespaces), deepest
// first.
func (s *hostState) unmount() error {
	roots := append([]string{s.Dir}, slices.DeleteFunc(slices.Clone(s.Paths), func(p string) bool { return p == cniCache })...)
	for round := 0; ; round++ {
		mounts, err := readMounts()
		if err != nil {
			return err
		}
		var points []string
		for _, m := range mounts {
			if slices.ContainsFunc(roots, func(r string) bool { return r != "" && under(m.point, r) }) {
				points = append(points, m.point)
			}
		}
		if len(points) == 0 {
			return nil
		}
		if round == 10 {
			return fmt.Errorf("still mounted after unmounting: %s", strings.Join(points, ", "))
		}
		// Deepest first; a mount stacked on another of the same point
		// goes one at a time.
		slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, p := range slices.Compact(points) {
			syscall.Unmount(p, syscall.MNT_DETACH)
		}
	}
}

// deleteLinks deletes the node's bridges and the pods' links on them (a
// pod's end goes with its network namespace; the host's end with it, or
// here).
func (s *hostState) deleteLinks() error {
	var errs []error
	for _, bridge := range s.Links {
		ports, _ := filepath.Glob(filepath.Join("/sys/class/net", bridge, "brif", "*"))
		for _, port := range ports {
			ip("link", "del", filepath.Base(port))
		}
		if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); err == nil {
			if err := ip("link", "del", bridge); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroups removes the node's cgroups from every hierarchy, the
// deepest first (a cgroup goes only once empty).
func (s *hostState) removeCgroups() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		for _, cg := range nodeCgroups {
			var dirs []string
			filepath.WalkDir(filepath.Join(h, cg), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (s *hostState) restoreSysctls() error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.Sysctls)) {
		want := s.Sysctls[name]
		if now, err := readSysctl(name); err == nil && now == want {
			continue
		}
		if err := os.WriteFile(sysctlPath(name), []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s to %s: %w", name, want, err))
		}
	}
	return errors.Join(errs...)
}

// removeLogLinks removes the kubelet's links to the pods' logs from
// /var/log/containers where that folder was there before the node (where
// the node made it, it goes whole).
func (s *hostState) removeLogLinks() error {
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && under(target, s.Dir) {
			os.Remove(l)
		}
	}
	return nil
}

// removeCNICache removes libcni's cache entries of the node's network
// (named after it).
func removeCNICache() error {
	var errs []error
	filepath.WalkDir(cniCache, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != cniCache && strings.Contains(d.Name(), cniNetwork) {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return errors.Join(errs...)
}

// removeEmptyDirs removes root and the folders in it that hold nothing.
func removeEmptyDirs(root string) {
	var dirs []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i]) // fails where something is left: others'
	}
}

// ip runs iproute2's ip.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
