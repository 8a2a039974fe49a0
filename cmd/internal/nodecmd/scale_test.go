package nodecmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/internal/fixture"
	"github.com/fediversity/podroles/internal/nixtest"
	"github.com/fediversity/podroles/nixeval"
)

// nodeFixtures is the number of node fixtures in testdata/modules/nodes.
func nodeFixtures(t *testing.T) int {
	found, err := filepath.Glob(repo("testdata/modules/nodes/*.nix"))
	if err != nil || len(found) < 20 {
		t.Fatalf("%d node fixtures, %v", len(found), err)
	}
	return len(found)
}

// fixturesFlake is a flake in a git work tree whose nodes are every node
// fixture of testdata/modules (nodeFixtures of them), each by the name of
// its file, most of them with findings, on nixpkgs' real module system.
// With broken, two more nodes fail to evaluate.
func fixturesFlake(t *testing.T, broken bool) (dir string) {
	t.Helper()
	fixture.NixpkgsLib(t)
	repo := fixture.NewRepo(t)
	repo.CopyModules("")
	more := ""
	if broken {
		more = ` // {
	    zz-throws = throw "zz throws";
	    aa-missing = (import ../nixos { }).nixosSystem { modules = [ { systemd.services = { }.nope; } ]; };
	  }`
	}
	repo.Write("deploy/flake.nix", `{
  outputs = { self }: {
    nixosConfigurations = builtins.listToAttrs (map
      (f: { name = builtins.replaceStrings [ ".nix" ] [ "" ] f; value = import (../nodes + "/${f}"); })
      (builtins.attrNames (builtins.readDir ../nodes)))`+more+`;
  };
}
`)
	repo.Add(".")
	repo.Commit("the fixtures as one flake")
	return repo.Dir
}

// TestJobsGiveTheSameReport: one nix worker or four, or a worker replaced
// after every node by --max-memory, the report is the same byte for byte,
// in every format, and so are the exit code and the errors of nodes that
// fail to evaluate.
func TestJobsGiveTheSameReport(t *testing.T) {
	for _, broken := range []bool{false, true} {
		dir := fixturesFlake(t, broken)
		formats := []string{"text", "json", "sarif"}
		if broken {
			formats = formats[:1]
		}
		for _, format := range formats {
			args := []string{"check", "--format", format, "--k8s-pod-module", filepath.Join(dir, "k8s-pod.nix"), "--flake", filepath.Join(dir, "deploy")}
			one := run(t, append(args, "--jobs", "1")...)
			for _, other := range [][]string{{"--jobs", "4"}, {"--jobs", "2", "--max-memory", "1"}} {
				// A bound of one byte: a fresh nix process for every node.
				if r := run(t, append(args, other...)...); one != r {
					t.Errorf("broken %v, %s: --jobs 1 and %s disagree:\n%d\n%s%s\n%d\n%s%s", broken, format, other, one.Code, one.Out, one.ErrOut, r.Code, r.Out, r.ErrOut)
				}
			}
			switch {
			case broken:
				// A line per failing node, in the order of the nodes.
				flake := filepath.Join(dir, "deploy")
				want := regexp.MustCompile(`^podroles check: eval node aa-missing \(flake ` + regexp.QuoteMeta(flake) + `\): option systemd.services: attribute 'nope' missing \(at [^ ]+/deploy/flake.nix:7:88\)\n` +
					`podroles check: eval node zz-throws \(flake ` + regexp.QuoteMeta(flake) + `\): zz throws \(at [^ ]+/deploy/flake.nix:6:\d+\)\n$`)
				if one.Code != cli.ExitCantRun || !want.MatchString(one.ErrOut) {
					t.Errorf("broken: exit %d, want 2 and a line per failing node:\n%s", one.Code, one.ErrOut)
				}
			case format == "text":
				if one.Code != cli.ExitFailed || !strings.Contains(one.Out, strconv.Itoa(nodeFixtures(t))+" nodes checked: ") || !strings.Contains(one.Out, "mastodon-sidekik-all.nix:12:7: error PR101") {
					t.Errorf("exit %d\n%s%s", one.Code, one.Out, one.ErrOut)
				}
			}
		}
	}
}

// TestShardsJoined: the facts of three shards, checked together, give the
// report of the facts of all the nodes, byte for byte; each shard holds
// the nodes its slice says, and together they hold each node once.
func TestShardsJoined(t *testing.T) {
	dir := fixturesFlake(t, false)
	out := t.TempDir()
	args := func(more ...string) []string {
		return append([]string{"facts", "--k8s-pod-module", filepath.Join(dir, "k8s-pod.nix"), "--flake", filepath.Join(dir, "deploy")}, more...)
	}
	if r := run(t, args("-o", filepath.Join(out, "all.json"))...); r.Code != cli.ExitOK {
		t.Fatalf("facts: exit %d\n%s", r.Code, r.ErrOut)
	}
	shards := []string{"check"}
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		file := filepath.Join(out, "facts-"+strconv.Itoa(i)+".json")
		if r := run(t, args("--shard", strconv.Itoa(i)+"/3", "-o", file)...); r.Code != cli.ExitOK {
			t.Fatalf("facts --shard %d/3: exit %d\n%s", i, r.Code, r.ErrOut)
		}
		text, _ := os.ReadFile(file)
		for _, m := range regexp.MustCompile(`"name": "([^"]+)"`).FindAllStringSubmatch(string(text), -1) {
			seen[m[1]]++
		}
		shards = append(shards, file)
	}
	if len(seen) != nodeFixtures(t) {
		t.Errorf("the shards hold %d nodes, want %d: %v", len(seen), nodeFixtures(t), seen)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s is in %d shards", name, n)
		}
	}
	joined := run(t, shards...)
	whole := run(t, "check", filepath.Join(out, "all.json"))
	if joined.Code != cli.ExitFailed || joined != whole {
		t.Errorf("the shards' facts checked together differ from all the facts:\n%d %s\n%d %s", joined.Code, joined.Out, whole.Code, whole.Out)
	}

	// A shard that holds none of the nodes passes, and says so.
	example := repo("examples/mastodon.nix")
	other := strconv.Itoa(3-nixeval.ShardOf(example, 2)) + "/2"
	r := run(t, "check", "--shard", other, example)
	if r.Code != cli.ExitOK || !strings.Contains(r.Out, "0 nodes checked") || r.ErrOut != "shard "+other+" holds none of the 1 nodes\n" {
		t.Errorf("an empty shard: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	if r := run(t, "check", "--shard", "5/4", filepath.Join(out, "all.json")); r.Code != cli.ExitCantRun || !strings.Contains(r.ErrOut, `I must be 1 to N`) {
		t.Errorf("--shard 5/4: exit %d\n%s", r.Code, r.ErrOut)
	}
}

// TestCheckKilledWorker: a nix worker killed in the middle of a node is one
// line that names the node, exit 2, and nothing of its process group is
// left, not even what nix had started.
func TestCheckKilledWorker(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	for _, f := range []string{started, filepath.Join(dir, "never")} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	node := filepath.Join(dir, "blocked.nix")
	os.WriteFile(node, []byte(`{ networking.hostName = "blocked"; systemd.services = builtins.seq (builtins.readFile ./started) (builtins.seq (builtins.readFile ./never) { }); }`), 0o644)
	// nix beside a process of its own group, as nix starts git.
	nix := filepath.Join(dir, "nix")
	os.WriteFile(nix, []byte("#!/bin/sh\nif [ \"$1\" != --version ]; then sleep 600 & fi\nexec "+nixtest.Nix(t)+" \"$@\"\n"), 0o755)

	result := make(chan clitest.Result, 1)
	go func() { result <- run(t, "check", "--nix", nix, "--jobs", "1", node) }()
	opened := make(chan struct{})
	go func() {
		if f, err := os.OpenFile(started, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		close(opened)
	}()
	select {
	case <-opened:
	case <-time.After(time.Minute):
		t.Fatal("nix never started the node")
	}
	workers := childGroups(t)
	if len(workers) != 1 {
		t.Fatalf("worker groups %v, want one", workers)
	}
	syscall.Kill(workers[0], syscall.SIGKILL)
	var r clitest.Result
	select {
	case r = <-result:
	case <-time.After(time.Minute):
		t.Fatal("check did not end after its worker was killed")
	}
	want := "podroles check: eval node blocked (file " + node + "): nix was killed (killed) while it evaluated this node; if the machine ran out of memory, lower --jobs or --max-memory\n"
	// The node is in the report, as nix failed on it.
	if r.Code != cli.ExitCantRun || r.ErrOut != want || !strings.HasPrefix(r.Out, "node blocked (file:"+node+"): evaluation failed: nix was killed (killed)") {
		t.Errorf("exit %d\n%s%s\nwant exit 2 and\n%s", r.Code, r.Out, r.ErrOut, want)
	}
	if left := inGroup(workers[0]); len(left) > 0 {
		t.Errorf("processes %v of the killed worker's group are left", left)
		syscall.Kill(-workers[0], syscall.SIGKILL)
	}
}

// childGroups are the children of this process that lead a process group
// of their own: nix workers.
func childGroups(t *testing.T) []int {
	var out []int
	for _, p := range procs(t) {
		if p.ppid == os.Getpid() && p.pgrp == p.pid && p.state != 'Z' {
			out = append(out, p.pid)
		}
	}
	return out
}

// inGroup are the live processes of group pgid.
func inGroup(pgid int) []int {
	var out []int
	for _, p := range procs(nil) {
		if p.pgrp == pgid && p.state != 'Z' && p.state != 'X' {
			out = append(out, p.pid)
		}
	}
	return out
}

type proc struct {
	pid, ppid, pgrp int
	state           byte
}

func procs(t *testing.T) []proc {
	entries, err := os.ReadDir("/proc")
	if err != nil && t != nil {
		t.Fatal(err)
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, proc{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out
}

// onTerminal runs args with standard error on a pseudo-terminal, and
// returns what the terminal showed, and what went to standard output.
func onTerminal(t *testing.T, args ...string) (shown, out string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&screen, ptmx)
	}()
	var stdout bytes.Buffer
	streams := &cli.Streams{In: strings.NewReader(""), Out: &stdout, ErrOut: tty}
	root := cli.NewRoot(cli.Root{Use: "podroles"}, streams, Commands(streams)...)
	code = cli.Main(t.Context(), root, append([]string{args[0], "--nix", nixtest.Nix(t)}, args[1:]...), tty)
	tty.Close()
	wg.Wait()
	// The terminal writes a newline as CR LF.
	return strings.ReplaceAll(screen.String(), "\r\n", "\n"), stdout.String(), code
}

// TestProgressOnATerminal: on a terminal, one line is drawn and redrawn in
// place while nix works (the nodes done of all, the nodes being evaluated,
// the time), never wider than the terminal, and cleared at the end; none
// with --quiet, nor beside a report for machines, nor on a pipe.
func TestProgressOnATerminal(t *testing.T) {
	dir := fixturesFlake(t, false)
	args := []string{"check", "--jobs", "2", "--k8s-pod-module", filepath.Join(dir, "k8s-pod.nix"), "--flake", filepath.Join(dir, "deploy")}
	shown, out, code := onTerminal(t, args...)
	all := strconv.Itoa(nodeFixtures(t))
	if code != cli.ExitFailed || !strings.Contains(out, all+" nodes checked") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	draws := strings.Split(shown, "\r\x1b[K")
	var evaluating, locating int
	for _, d := range draws {
		if len([]rune(d)) > 99 && !strings.HasSuffix(d, "\n") {
			t.Errorf("a line of %d characters on a terminal of 100: %q", len([]rune(d)), d)
		}
		// A line cut to the terminal's width ends in an ellipsis.
		full := strings.TrimSuffix(d, "…")
		switch {
		case regexp.MustCompile(`^evaluating nodes: \d+ of ` + all + ` done \(\d+s\)(; now [a-zA-Z0-9-]+(, [a-zA-Z0-9-]*)?)?$`).MatchString(full):
			evaluating++
		case regexp.MustCompile(`^locating definitions: \d+ of \d+ done \(\d+s\)(; now .*)?$`).MatchString(full):
			locating++
		case d == "", strings.HasPrefix(d, "starting nix ("), regexp.MustCompile(`^listing the nodes \(\d+s\)( of flake .*)?$`).MatchString(d):
		case regexp.MustCompile(`^evaluated ` + all + ` node\(s\) in [0-9.]+m?s\n$`).MatchString(d):
		default:
			t.Errorf("drawn: %q", d)
		}
	}
	// The line is redrawn at most a few times a second: a fast run may
	// draw the evaluation once and finish locating between two draws.
	if evaluating < 1 {
		t.Errorf("%d lines while evaluating, %d while locating:\n%q", evaluating, locating, shown)
	}
	if !strings.HasSuffix(shown, "\r\x1b[K") && !strings.Contains(draws[len(draws)-1], "evaluated") {
		t.Errorf("the line is not cleared at the end: %q", shown)
	}
	for _, quiet := range [][]string{{"--quiet"}, {"--format", "json"}, {"--format", "junit"}, {"--format", "sarif"}, {"--format", "github"}} {
		shown, _, _ := onTerminal(t, append(args, quiet...)...)
		if shown != "" {
			t.Errorf("%s: the terminal showed %q", quiet, shown)
		}
	}
	// On a pipe (the tests' buffers): nothing but the report.
	if r := run(t, args...); r.ErrOut != "" {
		t.Errorf("on a pipe: %q", r.ErrOut)
	}
}
