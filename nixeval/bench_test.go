package nixeval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/synthetic"
	. "github.com/fediversity/podroles/nixeval"
)

func TestSyntheticNodeExtracts(t *testing.T) {
	RequireNix(t)
	shape := synthetic.Shape{Name: "large", Units: 500, Roles: 5}
	dir := WriteTree(t, map[string]string{"large.nix": shape.Nix()})
	nodes, err := NewTestEvaluator(t).Extract(context.Background(), MustSources(t, FileSource, filepath.Join(dir, "large.nix")))
	if err != nil {
		t.Fatal(err)
	}
	want := shape.Facts()
	got := nodes[0]
	if len(got.Units) != len(want.Units) || len(got.PodRoles.Roles) != 5 || len(got.PodRoles.MainUnits) != len(want.PodRoles.MainUnits) {
		t.Fatalf("extracted %d units, %d roles", len(got.Units), len(got.PodRoles.Roles))
	}
}

func BenchmarkExtract5000Units50Roles(b *testing.B) {
	RequireNix(b)
	dir := WriteTree(b, map[string]string{"large.nix": synthetic.Shape{Name: "large", Units: 5000, Roles: 50}.Nix()})
	sources := MustSources(b, FileSource, filepath.Join(dir, "large.nix"))
	for b.Loop() {
		if _, err := NewTestEvaluator(b).Extract(context.Background(), sources); err != nil {
			b.Fatal(err)
		}
	}
}

// fiftyNodes writes 50 nodes of a realistic size (200 units, 5 roles).
func fiftyNodes(b *testing.B) []Source {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("node%02d.nix", i)] = synthetic.Shape{Name: fmt.Sprintf("node%02d", i), Units: 200, Roles: 5}.Nix()
	}
	dir := WriteTree(b, files)
	var sources []Source
	for name := range files {
		sources = append(sources, MustSources(b, FileSource, filepath.Join(dir, name))...)
	}
	return sources
}

// BenchmarkExtract50NodesOneProcess and BenchmarkExtract50NodesSeparately
// show what one nix process for all nodes saves over a process per node.
func BenchmarkExtract50NodesOneProcess(b *testing.B) {
	nix := RequireNix(b)
	sources := fiftyNodes(b)
	for b.Loop() {
		if _, err := (&Evaluator{Nix: nix, Jobs: 1}).Extract(context.Background(), sources); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtract50NodesSeparately(b *testing.B) {
	RequireNix(b)
	sources := fiftyNodes(b)
	for b.Loop() {
		for _, s := range sources {
			if _, err := NewTestEvaluator(b).Extract(context.Background(), []Source{s}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// moduleNode writes a correct node of 3,000 units and 30 roles that goes
// through nixpkgs' real module system (testdata/modules/nixos), its units
// spread over 30 modules as a host's would be, and returns its source.
func moduleNode(b *testing.B) []Source {
	fixture.NixpkgsLib(b)
	shape := synthetic.Shape{Name: "large", Units: 3000, Roles: 30}
	return MustSources(b, FileSource, fixture.ModuleNode(b, shape.Nix(), nil))
}

// BenchmarkModuleNode3000Units is the evaluation of a clean node of 3,000
// units through the real module system, without and with the FR-007 probe
// (one more lazy evaluation of the three lists in the node extended with a
// throwing systemd.services), and on k8s-pod.nix, where the units only the
// module makes are named too. The probe's cost is the difference between
// the first two; docs/check.md gives the figures.
func BenchmarkModuleNode3000Units(b *testing.B) {
	nix := RequireNix(b)
	sources := moduleNode(b)
	k8sPod := filepath.Join(fixture.RepoRoot(b), "testdata", "modules", "k8s-pod.nix")
	for _, c := range []struct {
		name string
		ev   *Evaluator
	}{
		{"without-probe", WithoutListsProbe(&Evaluator{Nix: nix})},
		{"with-probe", &Evaluator{Nix: nix}},
		{"k8s-pod-without-probe", WithoutListsProbe(&Evaluator{Nix: nix, K8sPodModule: k8sPod})},
		{"k8s-pod-with-probe", &Evaluator{Nix: nix, K8sPodModule: k8sPod}},
	} {
		b.Run(c.name, func(b *testing.B) {
			before := fixture.ChildCPU()
			for b.Loop() {
				nodes, err := c.ev.Extract(context.Background(), sources)
				if err != nil {
					b.Fatal(err)
				}
				if len(nodes[0].Units) < 3000 {
					b.Fatalf("%d units", len(nodes[0].Units))
				}
			}
			// nix's CPU time varies less than the wall clock on a
			// machine that others share.
			b.ReportMetric(float64((fixture.ChildCPU()-before).Milliseconds())/float64(b.N), "nix-cpu-ms/op")
		})
	}
}

// BenchmarkWorkers24ModuleNodes is issue 16's measure: 24 nodes that each
// cost about as much as a small real host (3,000 units of submodule options
// and 30 roles through nixpkgs' real module system, on k8s-pod.nix, with
// the FR-007 probe: most of a second and some hundreds of MB of nix's
// memory each), evaluated by one worker, by two, and by a nix process per
// node (a worker replaced after every node). Each reports nix's CPU time
// (which varies less than the wall clock on a shared machine) and the
// highest peak memory of one worker, and fails when the facts differ from
// one way to another or when a worker's peak passes the bound by more than
// one node's peak. docs/scale.md has the figures.
func BenchmarkWorkers24ModuleNodes(b *testing.B) {
	nix := RequireNix(b)
	fixture.NixpkgsLib(b)
	var sources []Source
	for i := range 24 {
		shape := synthetic.Shape{Name: fmt.Sprintf("host%02d", i), Units: 3000, Roles: 30}
		sources = append(sources, MustSources(b, FileSource, fixture.ModuleNode(b, shape.Nix(), nil))...)
	}
	k8sPod := filepath.Join(fixture.RepoRoot(b), "testdata", "modules", "k8s-pod.nix")
	// jobs-1 and jobs-2 under the bound that --max-memory would be on a
	// small machine (the default, 4GiB, is never reached here); the last
	// case under a bound that a worker passes after a few nodes.
	const bound, tight = 2 << 30, 640 << 20
	var first []byte
	var onePeak int64
	for _, c := range []struct {
		name      string
		jobs      int
		maxMemory int64
	}{
		{"process-per-node", 1, 1},
		{"jobs-1", 1, bound},
		{"jobs-2", 2, bound},
		{"jobs-2-max-memory-640MiB", 2, tight},
	} {
		b.Run(c.name, func(b *testing.B) {
			before := fixture.ChildCPU()
			var last Stats
			for b.Loop() {
				ev := &Evaluator{Nix: nix, K8sPodModule: k8sPod, Jobs: c.jobs, MaxMemory: c.maxMemory}
				nodes, err := ev.Extract(context.Background(), sources)
				if err != nil {
					b.Fatal(err)
				}
				out, err := json.Marshal(nodes)
				if err != nil {
					b.Fatal(err)
				}
				if first == nil {
					first = out
				} else if !bytes.Equal(out, first) {
					b.Fatalf("%s: the facts differ from the first run's", c.name)
				}
				last = ev.Stats()
			}
			cpu := fixture.ChildCPU() - before
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "nix-cpu-ms/op")
			// The cores nix had on average: on a machine that others share,
			// what the wall clock says depends on it.
			b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
			b.ReportMetric(loadAverage(), "load")
			b.ReportMetric(float64(last.PeakRSS>>20), "peak-MiB/worker")
			b.ReportMetric(float64(last.Workers), "workers/op")
			b.ReportMetric(float64(last.Replaced), "replaced/op")
			if c.maxMemory == 1 {
				onePeak = last.PeakRSS
			} else if onePeak > 0 && last.PeakRSS > c.maxMemory+onePeak {
				b.Errorf("%s: a worker peaked at %d MiB, past the bound of %d MiB plus one node's %d MiB", c.name, last.PeakRSS>>20, c.maxMemory>>20, onePeak>>20)
			}
		})
	}
}

// loadAverage is the machine's load over the last minute (0 where
// /proc/loadavg is missing), to read the wall clock's figures by.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var load float64
	fmt.Sscan(string(data), &load)
	return load
}

// BenchmarkFactsDocument3000UnitModuleNode is what lib.mkCheck and the node
// module pay at evaluation time for the definitions that their facts carry
// (every finding located, as podroles check locates it): the facts
// document of a clean node of 3,000 units and 30 roles, without and with
// them. docs/reports.md gives the figures.
func BenchmarkFactsDocument3000UnitModuleNode(b *testing.B) {
	nix := RequireNix(b)
	node := moduleNode(b)[0].Path
	document := filepath.Join(fixture.RepoRoot(b), "nixeval", "document.nix")
	for _, c := range []struct {
		name string
		with bool
	}{{"without-definitions", false}, {"with-definitions", true}} {
		b.Run(c.name, func(b *testing.B) {
			expr := fmt.Sprintf("import %s { nodes.large = import %s; withDefinitions = %t; }", document, node, c.with)
			before := fixture.ChildCPU()
			for b.Loop() {
				out, err := exec.Command(nix, "--extra-experimental-features", "nix-command", "eval", "--json", "--impure", "--expr", expr).Output()
				if err != nil {
					b.Fatalf("%v: %s", err, out)
				}
				if has := bytes.Contains(out, []byte(`"definitions"`)); has != c.with {
					b.Fatalf("the facts carry definitions: %t, want %t", has, c.with)
				}
			}
			b.ReportMetric(float64((fixture.ChildCPU()-before).Milliseconds())/float64(b.N), "nix-cpu-ms/op")
		})
	}
}
