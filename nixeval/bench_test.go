package nixeval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

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
	RequireNix(b)
	sources := fiftyNodes(b)
	for b.Loop() {
		if _, err := NewTestEvaluator(b).Extract(context.Background(), sources); err != nil {
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
