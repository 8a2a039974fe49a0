package nixeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fediversity/podroles/facts"
)

// manySources are 6 nodes of a flake (two of which fail to evaluate, each
// in its own way) and 3 files (one of which fails), for the tests that
// hold the workers to one result whatever their number.
func manySources(t *testing.T) []Source {
	dir := flakeTree(t, map[string]string{"broken.nix": `lite: {
	  zz-throws = lite.nixosSystem { modules = [ { systemd.services = throw "zz throws"; } ]; };
	  aa-missing = lite.nixosSystem { modules = [ { systemd.services = { }.nope; } ]; };
	  db = lite.nixosSystem { modules = [ { systemd.services.postgresql = { }; fediversity.podRoles.mainUnits = [ "postgresql" ]; } ]; };
	  cache = lite.nixosSystem { modules = [ { systemd.services.redis = { }; } ]; };
	}`})
	files := writeTree(t, map[string]string{
		"a.nix":      `{ networking.hostName = "file-a"; systemd.services.a = { }; }`,
		"b.nix":      `{ systemd.services.b = { }; fediversity.podRoles.sharedUnits = [ "b" ]; }`,
		"syntax.nix": "{\n  a = 1\n}\n",
	})
	return append(mustSources(t, FlakeSource, dir),
		mustSources(t, FileSource, filepath.Join(files, "a.nix"), filepath.Join(files, "syntax.nix"), filepath.Join(files, "b.nix"))...)
}

// outcomeOf is what an extraction gave, as text that compares.
func outcomeOf(t *testing.T, nodes []*facts.Node, err error) string {
	t.Helper()
	doc, jsonErr := json.Marshal(nodes)
	if jsonErr != nil {
		t.Fatal(jsonErr)
	}
	var lines []string
	for _, e := range errorsOf(err) {
		lines = append(lines, e.Error())
	}
	return string(doc) + "\n" + strings.Join(lines, "\n")
}

func errorsOf(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestJobsGiveOneResult: the facts and the errors, one per failing node in
// the order of the nodes, are the same with one worker and with four; each
// error names its node, and the nodes that evaluate are evaluated all the
// same.
func TestJobsGiveOneResult(t *testing.T) {
	requireNix(t)
	sources := manySources(t)
	var outcomes []string
	for _, jobs := range []int{1, 4} {
		ev := &Evaluator{Nix: requireNix(t), Jobs: jobs}
		nodes, err := extract(t, ev, sources)
		outcomes = append(outcomes, outcomeOf(t, nodes, err))
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		// Beside the errors, every node that evaluated.
		if want := []string{"cache", "db", "mastodon", "web", "file-a", "b"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("jobs %d: nodes %q beside the errors, want %q", jobs, names, want)
		}
		errs := errorsOf(err)
		var failing, reported []string
		for _, e := range errs {
			var ee *EvalError
			var ne *NodeError
			if !errors.As(e, &ee) || !errors.As(e, &ne) {
				t.Fatalf("jobs %d: %v is no EvalError of a NodeError", jobs, e)
			}
			failing = append(failing, ee.Node+"|"+ee.Source)
			loc := ne.Location()
			reported = append(reported, fmt.Sprintf("%s|%s|%s:%d", ne.Node, ne.Source, loc.File, loc.Line))
		}
		want := []string{"aa-missing|flake " + sources[0].Display, "zz-throws|flake " + sources[0].Display, "|file " + sources[2].Display}
		if !reflect.DeepEqual(failing, want) {
			t.Errorf("jobs %d: failing nodes %q, want %q\n%v", jobs, failing, want, err)
		}
		// A file's node is named after the file when nix failed before its
		// hostName; a syntax error is placed where nix says.
		flake := "flake:" + sources[0].Ref + "#"
		wantReported := []string{"aa-missing|" + flake + "aa-missing|" + filepath.Join(sources[0].Checkout, "broken.nix") + ":3",
			"zz-throws|" + flake + "zz-throws|" + filepath.Join(sources[0].Checkout, "broken.nix") + ":2",
			"syntax|file:" + sources[2].Display + "|" + sources[2].Path + ":3"}
		if !reflect.DeepEqual(reported, wantReported) {
			t.Errorf("jobs %d: reported %q, want %q", jobs, reported, wantReported)
		}
		if failed, ok := NodeErrors(err); !ok || len(failed) != 3 {
			t.Errorf("jobs %d: NodeErrors gives %d, %v", jobs, len(failed), ok)
		}
		if s := ev.Stats(); s.Workers > jobs+3 {
			// A failed node ends its worker; at most one worker more for
			// each of the three.
			t.Errorf("jobs %d: %d workers", jobs, s.Workers)
		}
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("one worker and four disagree:\n%s\n%s", outcomes[0], outcomes[1])
	}

	// Without the failing nodes, the facts too.
	good := slices.Clone(sources)
	good[0].Attr = "db"
	good = append(good[:2], good[3:]...)
	var facts []string
	for _, jobs := range []int{1, 4} {
		nodes, err := extract(t, &Evaluator{Nix: requireNix(t), Jobs: jobs}, good)
		if err != nil || len(nodes) != 3 {
			t.Fatalf("jobs %d: %d nodes, %v", jobs, len(nodes), err)
		}
		facts = append(facts, outcomeOf(t, nodes, err))
	}
	if facts[0] != facts[1] {
		t.Errorf("one worker and four disagree:\n%s\n%s", facts[0], facts[1])
	}
}

// TestWorkersKeepOrderWhenTheFirstIsSlow: a slow first node holds only its
// own worker; the other nodes are done meanwhile, and the facts come in
// the order of the sources all the same.
func TestWorkersKeepOrderWhenTheFirstIsSlow(t *testing.T) {
	requireNix(t)
	files := map[string]string{"slow.nix": `{ systemd.services = builtins.listToAttrs (builtins.genList (i: { name = "u${toString i}"; value = { }; }) 300000); }`}
	paths := []string{"slow.nix"}
	for i := range 6 {
		name := fmt.Sprintf("quick%d.nix", i)
		files[name] = emptyNode
		paths = append(paths, name)
	}
	sources := fileSources(t, files, paths)
	var mu sync.Mutex
	var doneWhileSlow int
	ev := &Evaluator{Nix: requireNix(t), Jobs: 2, Progress: func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Phase == "evaluating" && slices.Contains(p.Current, sources[0].Display) {
			doneWhileSlow = p.Done
		}
	}}
	nodes, err := extract(t, ev, sources)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if want := []string{"slow", "quick0", "quick1", "quick2", "quick3", "quick4", "quick5"}; !reflect.DeepEqual(names, want) {
		t.Errorf("nodes %q, want %q", names, want)
	}
	if doneWhileSlow != 6 {
		t.Errorf("%d nodes were done while the slow one was evaluated, want the other 6", doneWhileSlow)
	}
}

// TestManyNodesOneProcess: one worker evaluates every node, nix's start-up
// paid once; with two, two processes for four nodes, not four.
func TestManyNodesOneProcess(t *testing.T) {
	for _, jobs := range []int{1, 2} {
		nix, log := countingNix(t)
		dir := flakeTree(t, nil)
		files := writeTree(t, map[string]string{"a.nix": emptyNode, "b.nix": emptyNode})
		sources := append(mustSources(t, FlakeSource, dir),
			mustSources(t, FileSource, filepath.Join(files, "a.nix"), filepath.Join(files, "b.nix"))...)
		ev := &Evaluator{Nix: nix, Jobs: jobs}
		nodes, err := extract(t, ev, sources)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 4 {
			t.Fatalf("got %d nodes, want 4", len(nodes))
		}
		if evals, versions := evaluations(t, log); evals != jobs || versions != 1 {
			t.Errorf("jobs %d: nix evaluated in %d processes for 4 nodes and read its version %d times, want %d and once", jobs, evals, versions, jobs)
		}
		requireNixGone(t, log, "the evaluation")
	}
}

// blockingNode is a node whose evaluation opens the FIFO started, then
// blocks for good on another: once a test's open of started for writing
// returns, nix is in the middle of the node.
func blockingNode(t *testing.T) (dir, started string) {
	dir = t.TempDir()
	started = filepath.Join(dir, "started")
	for _, f := range []string{started, filepath.Join(dir, "never")} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// nix 2.8 reads a FIFO to its end, 2.24 reads nothing of it: either
	// way it has opened it.
	text := `{ systemd.services = builtins.seq (builtins.readFile ./started) (builtins.seq (builtins.readFile ./never) { }); }`
	if err := os.WriteFile(filepath.Join(dir, "blocked.nix"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, started
}

// waitOpened opens fifo for writing, which returns once nix opens it, and
// closes it; it fails the test after a minute.
func waitOpened(t *testing.T, fifo string) {
	t.Helper()
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("nix never opened " + fifo)
	}
}

// groupNix is the nix of the tests started beside a sleep of its own
// process group, as nix starts git for a flake: what podroles must stop
// with it.
func groupNix(t *testing.T) string {
	nix := filepath.Join(t.TempDir(), "nix")
	script := "#!/bin/sh\nif [ \"$1\" != --version ]; then sleep 600 & fi\nexec " + requireNix(t) + " \"$@\"\n"
	if err := os.WriteFile(nix, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return nix
}

// TestKilledWorker: a worker killed in the middle of a node (as the kernel
// kills a process when memory runs out) is a clean error that names the
// node; the other nodes are evaluated by a fresh worker, and nothing of
// the killed worker's process group is left.
func TestKilledWorker(t *testing.T) {
	requireNix(t)
	dir, started := blockingNode(t)
	if err := os.WriteFile(filepath.Join(dir, "after.nix"), []byte(emptyNode), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := &Evaluator{Nix: groupNix(t), Jobs: 1}
	result := make(chan error, 1)
	go func() {
		_, err := ev.Extract(context.Background(), mustSources(t, FileSource, filepath.Join(dir, "blocked.nix"), filepath.Join(dir, "after.nix")))
		result <- err
	}()
	waitOpened(t, started)
	groups := ev.Stats().Groups
	if len(groups) != 1 {
		t.Fatalf("workers %v, want one", groups)
	}
	// The kernel's OOM killer kills the process, not its group.
	if err := syscall.Kill(groups[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-result:
	case <-time.After(time.Minute):
		t.Fatal("the evaluation did not end after its worker was killed")
	}
	var ee *EvalError
	if !errors.As(err, &ee) || len(errorsOf(err)) != 1 {
		t.Fatalf("err = %v, want one EvalError", err)
	}
	want := "eval node blocked (file " + filepath.Join(dir, "blocked.nix") + "): nix was killed (killed) while it evaluated this node; if the machine ran out of memory, lower --jobs or --max-memory"
	if err.Error() != want {
		t.Errorf("err = %s\nwant  %s", err, want)
	}
	s := ev.Stats()
	if s.Workers != 2 {
		t.Errorf("%d workers, want a second one for after.nix", s.Workers)
	}
	for _, g := range s.Groups {
		if left := processesInGroup(g); len(left) > 0 {
			t.Errorf("processes %v of worker group %d are left", left, g)
			syscall.Kill(-g, syscall.SIGKILL)
		}
	}
}

// TestMaxMemoryReplacesWorkers: a worker past MaxMemory after a node is
// replaced before the next, and the facts are those of an unbounded run.
func TestMaxMemoryReplacesWorkers(t *testing.T) {
	requireNix(t)
	files := map[string]string{}
	var paths []string
	for i := range 4 {
		name := fmt.Sprintf("n%d.nix", i)
		files[name] = fmt.Sprintf(`{ systemd.services = builtins.listToAttrs (builtins.genList (i: { name = "n%d-u${toString i}"; value = { }; }) 2000); }`, i)
		paths = append(paths, name)
	}
	sources := fileSources(t, files, paths)
	free := &Evaluator{Nix: requireNix(t), Jobs: 1}
	want, err := extract(t, free, sources)
	if err != nil {
		t.Fatal(err)
	}
	// Any nix is past one byte: every node gets a fresh worker.
	bounded := &Evaluator{Nix: requireNix(t), Jobs: 1, MaxMemory: 1}
	got, err := extract(t, bounded, sources)
	if err != nil {
		t.Fatal(err)
	}
	if outcomeOf(t, got, nil) != outcomeOf(t, want, nil) {
		t.Error("the facts differ from those of an unbounded run")
	}
	if s := bounded.Stats(); s.Workers != 4 || s.Replaced != 3 || s.PeakRSS <= 0 {
		t.Errorf("bounded: %+v, want 4 workers, each but the last replaced before the next node, and a peak", s)
	}
	if s := free.Stats(); s.Workers != 1 || s.Replaced != 0 {
		t.Errorf("unbounded: %+v, want one worker", s)
	}
	for _, g := range append(bounded.Stats().Groups, free.Stats().Groups...) {
		if left := processesInGroup(g); len(left) > 0 {
			t.Errorf("processes %v of worker group %d are left", left, g)
		}
	}
}

// TestShardSlices: for any number of slices, the slices of a set of names
// are disjoint and together hold the set, and a name's slice does not
// depend on the other names.
func TestShardSlices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		names := map[string]bool{}
		for range r.IntN(60) {
			names[fmt.Sprintf("node-%d-%x", r.IntN(1000), r.Uint32())] = true
		}
		count := 1 + r.IntN(12)
		seen := map[string]int{}
		for index := 1; index <= count; index++ {
			s := Shard{Index: index, Count: count}
			for name := range names {
				if s.Holds(name) {
					if first, ok := seen[name]; ok {
						t.Fatalf("round %d: %s is in slices %d and %d of %d", round, name, first, index, count)
					}
					seen[name] = index
				}
			}
		}
		if len(seen) != len(names) {
			t.Fatalf("round %d: the %d slices hold %d of %d names", round, count, len(seen), len(names))
		}
		for name, index := range seen {
			if ShardOf(name, count) != index {
				t.Fatalf("%s: slice %d, ShardOf %d", name, index, ShardOf(name, count))
			}
		}
	}
	for _, bad := range []string{"", "1", "0/3", "4/3", "a/b", "1/0", "-1/2", "1/2/3"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) took it", bad)
		}
	}
	if s, err := ParseShard("2/4"); err != nil || s != (Shard{2, 4}) || s.String() != "2/4" {
		t.Errorf("ParseShard(2/4) = %v, %v", s, err)
	}
}

// TestShardEvaluatesItsNodesOnly: a shard lists a flake's nodes without
// evaluating them and evaluates its own only, so a node that fails fails
// only the shard that holds it; the shards together give every node once,
// with the facts of a run without shards.
func TestShardEvaluatesItsNodesOnly(t *testing.T) {
	requireNix(t)
	sources := manySources(t)
	const count = 3
	for index := 1; index <= count; index++ {
		shard := Shard{Index: index, Count: count}
		_, total, err := (&Evaluator{Nix: requireNix(t), Shard: shard}).extract(context.Background(), sources)
		if total != 9 {
			t.Errorf("shard %s: %d nodes in all, want 9", shard, total)
		}
		var failing, want []string
		for _, e := range errorsOf(err) {
			var ee *EvalError
			if errors.As(e, &ee) {
				failing = append(failing, ee.Node+"|"+ee.Source)
			}
		}
		for _, f := range []struct{ key, node, source string }{
			{"aa-missing", "aa-missing", "flake " + sources[0].Display},
			{"zz-throws", "zz-throws", "flake " + sources[0].Display},
			{filepath.Clean(sources[2].Display), "", "file " + sources[2].Display},
		} {
			if shard.Holds(f.key) {
				want = append(want, f.node+"|"+f.source)
			}
		}
		if !reflect.DeepEqual(failing, want) {
			t.Errorf("shard %s: failing %q, want %q (%v)", shard, failing, want, err)
		}
	}

	// The nodes that evaluate: every one in one shard.
	good := append(mustSources(t, FlakeSource, flakeTree(t, nil)), sources[1], sources[3])
	all, err := extract(t, evaluator(t), good)
	if err != nil {
		t.Fatal(err)
	}
	var joined []*facts.Node
	for index := 1; index <= count; index++ {
		shard := Shard{Index: index, Count: count}
		nodes, total, err := (&Evaluator{Nix: requireNix(t), Shard: shard}).LoadShard(context.Background(), good)
		if err != nil || total != 4 {
			t.Fatalf("shard %s: %d nodes in all, %v", shard, total, err)
		}
		for _, n := range nodes {
			if !shard.Holds(ShardKey(n)) {
				t.Errorf("shard %s holds %s (key %s)", shard, n.Name, ShardKey(n))
			}
		}
		joined = append(joined, nodes...)
	}
	slices.SortFunc(joined, func(a, b *facts.Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(all, func(a, b *facts.Node) int { return strings.Compare(a.Name, b.Name) })
	if outcomeOf(t, joined, nil) != outcomeOf(t, all, nil) {
		t.Errorf("the shards together differ from one run:\n%s\n%s", outcomeOf(t, joined, nil), outcomeOf(t, all, nil))
	}
}

// processesInGroup are the processes left in process group pgid.
func processesInGroup(pgid int) []int {
	pids, _ := processGroup(pgid)
	return pids
}
