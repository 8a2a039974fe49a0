package flaketest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/nixeval"
)

// TestShardOfAgreesWithPodroles: nix/shard.nix (lib.shardOf) puts each node
// in the slice that podroles --shard puts it in.
func TestShardOfAgreesWithPodroles(t *testing.T) {
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("node-%d", i*7919), fmt.Sprintf("web%02d.example.org", i))
	}
	list, _ := json.Marshal(names)
	var got [][]int
	nixEval(t, buildPodroles(t), `map (count: map (self.lib.shardOf count) (builtins.fromJSON ''`+string(list)+`'')) [ 1 2 3 7 64 1000 ]`, &got)
	for k, count := range []int{1, 2, 3, 7, 64, 1000} {
		for i, name := range names {
			if want := nixeval.ShardOf(name, count); got[k][i] != want {
				t.Fatalf("%s of %d: nix says slice %d, podroles %d", name, count, got[k][i], want)
			}
		}
	}
}

// TestMkCheckShards: lib.mkCheckShards makes one check per slice, named
// NAME-I-of-N; each evaluates the facts of its slice's nodes only (a node
// that throws fails its own slice's evaluation only), an empty slice
// passes, and the slices' facts together give the findings of one
// mkCheck of every node.
func TestMkCheckShards(t *testing.T) {
	bin := buildPodroles(t)
	const nodes = `{
	  mastodon = import (repo + "/examples/mastodon.nix");
	  directory = import (repo + "/examples/directory.nix");
	  mastodon-vm = import (repo + "/examples/mastodon-vm.nix");
	  renamed = import (repo + "/examples/broken/mastodon-renamed.nix");
	  shared-init = { systemd.services = { app-init = { }; web = { }; }; fediversity.k8sPod.enable = true;
	                  fediversity.podRoles = { mainUnits = [ "web" ]; sharedUnits = [ "app-init" ]; }; };
	  plain = { systemd.services.web = { }; fediversity.podRoles.mainUnits = [ "web" ]; };
	}`
	names := []string{"directory", "mastodon", "mastodon-vm", "plain", "renamed", "shared-init"}
	const count = 3
	var got struct {
		Keys    []string
		Scripts map[string]string
		Whole   string
		Many    []string
		Empty   string
	}
	nixEval(t, bin, `let
	  nodes = `+nodes+`;
	  shards = self.lib.mkCheckShards { inherit pkgs nodes; shards = `+fmt.Sprint(count)+`; };
	  many = self.lib.mkCheckShards { inherit pkgs nodes; shards = 40; name = "many"; };
	in {
	  keys = builtins.attrNames shards;
	  scripts = builtins.mapAttrs (_: c: c.buildCommand) shards;
	  whole = (self.lib.mkCheck { inherit pkgs nodes; }).buildCommand;
	  many = builtins.attrNames many;
	  empty = (builtins.head (builtins.filter (c: builtins.match ".*empty-shard.*" c.buildCommand != null) (builtins.attrValues many))).buildCommand;
	}`, &got)
	if want := []string{"podroles-check-1-of-3", "podroles-check-2-of-3", "podroles-check-3-of-3"}; !reflect.DeepEqual(got.Keys, want) {
		t.Fatalf("checks %q, want %q", got.Keys, want)
	}
	if len(got.Many) != 40 {
		t.Errorf("40 shards made %d checks", len(got.Many))
	}

	_, _, wholeOut := runScript(t, got.Whole)
	var files []string
	seen := map[string]int{}
	for i := 1; i <= count; i++ {
		key := fmt.Sprintf("podroles-check-%d-of-%d", i, count)
		status, output, out := runScript(t, got.Scripts[key])
		var want []string
		for _, n := range names {
			if nixeval.ShardOf(n, count) == i {
				want = append(want, n)
			}
		}
		if len(want) == 0 {
			continue
		}
		doc, err := facts.ReadFile(filepath.Join(out, "facts.json"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", key, err, output)
		}
		var held []string
		for _, n := range doc.Nodes {
			held = append(held, n.Name)
			seen[n.Name]++
		}
		slices.Sort(held)
		if !reflect.DeepEqual(held, want) {
			t.Errorf("%s holds %q, want %q", key, held, want)
		}
		// Only the slice that holds the renamed example fails.
		if fails := slices.Contains(want, "renamed"); (status == 1) != fails {
			t.Errorf("%s: exit %d\n%s", key, status, output)
		}
		files = append(files, filepath.Join(out, "facts.json"))
	}
	if len(seen) != len(names) {
		t.Errorf("the slices hold %v, want each of %q once", seen, names)
	}
	check := func(args ...string) string {
		out, _ := exec.Command(filepath.Join(bin, "bin", "podroles-check"), append([]string{"check"}, args...)...).Output()
		return string(out)
	}
	joined, whole := check(files...), check(filepath.Join(wholeOut, "facts.json"))
	if whole == "" || joined != whole {
		t.Errorf("the slices' facts checked together:\n%s\nall the facts:\n%s", joined, whole)
	}

	// A slice of no node passes without podroles.
	status, output, out := runScript(t, got.Empty)
	if _, err := os.Stat(filepath.Join(out, "empty-shard")); status != 0 || err != nil || !strings.Contains(output, "holds none of the 6 nodes") {
		t.Errorf("an empty slice: exit %d, %v\n%s", status, err, output)
	}

	// A slice evaluates its own nodes only: a node that throws breaks the
	// evaluation of its slice, and of no other.
	var throws string
	for i := 1; i <= count; i++ {
		if nixeval.ShardOf("zz-throws", count) != i {
			nixEval(t, bin, `(self.lib.mkCheckShards { inherit pkgs; shards = `+fmt.Sprint(count)+`; nodes = `+nodes+` // { zz-throws = throw "evaluated"; }; })."podroles-check-`+fmt.Sprint(i)+`-of-3".buildCommand`, &throws)
		}
	}
}
