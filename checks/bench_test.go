package checks_test

import (
	"testing"

	"github.com/fediversity/podroles/checks"
	"github.com/fediversity/podroles/internal/synthetic"
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
