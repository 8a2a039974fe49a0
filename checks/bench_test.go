package checks_test

import (
	"context"
	"testing"
	"time"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/internal/synthetic"
	"github.com/fediversity/podroles/nixeval"
	"github.com/fediversity/podroles/report"
)

var large = synthetic.Shape{Name: "large", Units: 5000, Roles: 50}

func TestSyntheticNodeIsClean(t *testing.T) {
	if res := checks.CheckNode(large.Facts(), checks.Rules()); len(res.Findings) != 0 {
		t.Fatalf("the benchmark's node should be correct: %+v", res.Findings[0])
	}
}

// BenchmarkCheck5000Units50Roles is the cost of every rule on a large node;
// compare it with nixeval's BenchmarkExtract5000Units50Roles, the nix
// evaluation it follows.
func BenchmarkCheck5000Units50Roles(b *testing.B) {
	node := large.Facts()
	b.ReportAllocs()
	for b.Loop() {
		checks.CheckNode(node, checks.Rules())
	}
}

// BenchmarkLocations3000UnitModuleNode is the cost of the locations pass on
// a node of 3,000 units and 30 roles through nixpkgs' real module system,
// as a share of the evaluation and check before it (locate/eval-%, wall
// clock; locate-nix-cpu/eval-nix-cpu-%, CPU time of nix). On the clean node
// the pass asks nix nothing. On the node with findings (a misspelled name in
// mainUnits, whose position needs the modules read again, and a unit in no
// list) it is a second nix process for that node alone.
func BenchmarkLocations3000UnitModuleNode(b *testing.B) {
	nixtest.Nix(b)
	fixture.NixpkgsLib(b)
	shape := synthetic.Shape{Name: "large", Units: 3000, Roles: 30}
	broken := `{
  fediversity.podRoles.mainUnits = [ "app-unit-typo" ];
  systemd.services.unlisted = { };
}
`
	for _, c := range []struct {
		name     string
		node     string
		findings int
	}{
		{"clean", fixture.ModuleNode(b, shape.Nix(), nil), 0},
		{"with-findings", fixture.ModuleNode(b, shape.Nix(), map[string]string{"broken.nix": broken}), 2},
	} {
		b.Run(c.name, func(b *testing.B) {
			source, err := nixeval.FileSource(c.node)
			if err != nil {
				b.Fatal(err)
			}
			var evalWall, locateWall, evalCPU, locateCPU time.Duration
			for b.Loop() {
				cpu0, start := fixture.ChildCPU(), time.Now()
				ev := &nixeval.Evaluator{Nix: nixtest.Nix(b)}
				nodes, err := ev.Extract(context.Background(), []nixeval.Source{source})
				if err != nil {
					b.Fatal(err)
				}
				results := checks.Check(nodes)
				cpu1, mid := fixture.ChildCPU(), time.Now()
				if err := checks.Locate(context.Background(), results, ev.Locate, report.Paths{}); err != nil {
					b.Fatal(err)
				}
				cpu2, end := fixture.ChildCPU(), time.Now()
				evalWall, locateWall = evalWall+mid.Sub(start), locateWall+end.Sub(mid)
				evalCPU, locateCPU = evalCPU+cpu1-cpu0, locateCPU+cpu2-cpu1

				located := 0
				for _, f := range results[0].Findings {
					if f.Location != nil && f.Location.Line > 0 {
						located++
					}
				}
				if len(results[0].Findings) != c.findings || located != c.findings {
					b.Fatalf("%d findings, %d located at a line; want %d", len(results[0].Findings), located, c.findings)
				}
			}
			b.ReportMetric(100*float64(locateWall)/float64(evalWall), "locate/eval-%")
			b.ReportMetric(100*float64(locateCPU)/float64(max(evalCPU, 1)), "locate-nix-cpu/eval-nix-cpu-%")
			b.ReportMetric(float64(locateWall.Milliseconds())/float64(b.N), "locate-ms/op")
		})
	}
}
