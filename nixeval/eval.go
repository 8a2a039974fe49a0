// Package nixeval is podroles' bridge to nix. It evaluates NixOS nodes
// with the real nix (a flake's nixosConfigurations, .nix files, many
// nodes in one process) and fills the facts model of package facts from
// what nix prints.
//
// The projection itself is a Nix expression of ours (facts.nix, embedded in
// the binary) written with builtins only, so that it works on any config
// without nixpkgs and forces nothing but the fields of the node surface:
// never a unit's script, a package or a derivation.
package nixeval

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/internal/nixversion"
	"github.com/tidwall/gjson"
)

// FactsNix is facts.nix: a function from a node's config to its facts. The
// flake's lib.facts is this same file.
//
//go:embed facts.nix
var FactsNix []byte

//go:embed extract.nix
var extractNix []byte

//go:embed node.nix
var nodeNix []byte

//go:embed locate.nix
var locateNix []byte

//go:embed serve.nix
var serveNix []byte

// Evaluator runs nix. The zero value runs "nix" from PATH with no timeout,
// a worker per core and no bound on a worker's memory.
//
// Nodes are evaluated by workers: long-lived nix processes that each take
// the next node from a shared queue (serve.nix), so that nix starts once
// per worker, not once per node, and a slow node holds only its own worker.
type Evaluator struct {
	// Nix is the nix command, a name looked up in PATH or a path.
	Nix string
	// Timeout bounds an evaluation (Extract, Locate), all its workers
	// together; zero means none.
	Timeout time.Duration
	// K8sPodModule, when set, is a module that every NixOS system is
	// extended with (extendModules) before extraction: the node as the
	// k8s method evaluates it, on k8s-pod.nix.
	K8sPodModule string
	// Jobs is the number of workers that evaluate nodes at once; zero
	// means one per core.
	Jobs int
	// MaxMemory bounds a worker's resident memory, in bytes, with
	// whatever it started (its process group, from /proc): a worker
	// past it after a node is replaced by a fresh one before the next.
	// Zero means no bound.
	MaxMemory int64
	// Shard keeps the nodes of one slice only; the zero Shard keeps all.
	Shard Shard
	// Progress, when set, is told whenever a node starts or ends, from
	// the workers' goroutines, one call at a time.
	Progress func(Progress)

	// mu guards origins, where each node that Extract read came from
	// (for Locate), located, the definitions that facts documents carry
	// (for Locate too), and stats.
	mu      sync.Mutex
	origins map[facts.NodeRef]origin
	located map[facts.NodeRef][]facts.Located
	stats   Stats

	// Definitions makes the facts carry the definitions that findings
	// could ask about (podroles facts), so that a check of them places
	// its findings without nix, as lib.mkCheck's facts do.
	Definitions bool
	// withoutListsProbe skips the FR-007 probe, for the benchmark that
	// measures what the probe costs; users always have it.
	withoutListsProbe bool

	// VersionCache is the file that keeps the versions of the nixes run
	// before (DefaultVersionCache), so that a run asks `nix --version`
	// once per nix binary, not once per run; "" keeps none.
	VersionCache string

	// The version of nix, read once per Evaluator (once per run of a
	// command), not per node or per call.
	versionOnce sync.Once
	versionErr  error
}

// OldestNix is the oldest nix release that podroles' tests cover (CI runs
// them on Debian 12's nix 2.8 and on Nix 2.24; docs/nix-versions.md).
// Older releases are untried; before 2.4 nix has neither flakes nor
// `nix eval --expr`.
var OldestNix = nixversion.MustParse("2.8")

// NixTooOldError refuses a nix older than OldestNix.
type NixTooOldError struct {
	Nix     string
	Version nixversion.Version
}

func (e *NixTooOldError) Error() string {
	return fmt.Sprintf("%s is nix %s, older than %s, the oldest nix podroles is tested on: upgrade nix or give --nix PATH to nix %s or later", e.Nix, e.Version, OldestNix, OldestNix)
}

// NotNixError refuses a command given as nix whose --version says it is
// none (--nix /bin/cat), or that failed to say.
type NotNixError struct {
	Nix string
	// Printed is the first line of what `Nix --version` printed, or "".
	Printed string
	// Failed is how it failed (exit status 1), or nil.
	Failed error
}

func (e *NotNixError) Error() string {
	run := fmt.Sprintf("--nix %s: `%s --version`", e.Nix, e.Nix)
	switch {
	case e.Failed != nil && e.Printed == "":
		return fmt.Sprintf("%s failed (%v) and printed nothing; give --nix PATH to nix %s or later", run, e.Failed, OldestNix)
	case e.Failed != nil:
		return fmt.Sprintf("%s failed (%v): %s", run, e.Failed, e.Printed)
	case e.Printed == "":
		return fmt.Sprintf("%s printed nothing, which is no nix; give --nix PATH to nix %s or later", run, OldestNix)
	}
	return fmt.Sprintf("%s printed %q, which is no nix; give --nix PATH to nix %s or later", run, e.Printed, OldestNix)
}

// checkVersion runs `nix --version` the first time it is called (unless
// VersionCache has the version of that very file) and refuses
// a command that is no nix (whose --version fails, or does not start with
// "nix", as nix's forks' do too), and a nix older than OldestNix.
func (e *Evaluator) checkVersion(ctx context.Context) error {
	e.versionOnce.Do(func() {
		path, err := e.nixPath()
		if err != nil {
			e.versionErr = err
			return
		}
		if v, ok := lookupVersion(e.VersionCache, path); ok {
			e.versionErr = e.tooOld(v)
			return
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, "--version")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil && ctx.Err() != nil {
			e.versionErr = fmt.Errorf("%s --version: %w", e.nixName(), ctx.Err())
			return
		}
		firstLine := func(b []byte) string {
			line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
			return strings.TrimSpace(line)
		}
		if err != nil {
			e.versionErr = &NotNixError{Nix: e.nixName(), Printed: firstLine(append(stderr.Bytes(), out...)), Failed: err}
			return
		}
		printed := firstLine(out)
		v, err := nixversion.FromOutput(printed)
		if fields := strings.Fields(printed); err != nil || fields[0] != "nix" {
			e.versionErr = &NotNixError{Nix: e.nixName(), Printed: printed}
			return
		}
		keepVersion(e.VersionCache, path, v)
		e.versionErr = e.tooOld(v)
	})
	return e.versionErr
}

// tooOld refuses a nix older than OldestNix.
func (e *Evaluator) tooOld(v nixversion.Version) error {
	if v.Less(OldestNix) {
		return &NixTooOldError{Nix: e.nixName(), Version: v}
	}
	return nil
}

func (e *Evaluator) nixName() string {
	if e.Nix == "" {
		return "nix"
	}
	return e.Nix
}

// nixPath finds the nix command.
func (e *Evaluator) nixPath() (string, error) {
	path, err := exec.LookPath(e.nixName())
	if err != nil {
		return "", &NixNotFoundError{Nix: e.nixName(), Why: nixPathProblem(e.nixName())}
	}
	return path, nil
}

// nixPathProblem says what is wrong with a nix named by its path (a
// folder, a file no one may run), where "not found" would mislead; ""
// for a name looked up on PATH, or a path with nothing there.
func nixPathProblem(nix string) string {
	if !strings.Contains(nix, "/") {
		return ""
	}
	info, err := os.Stat(nix)
	switch {
	case err != nil:
		return ""
	case info.IsDir():
		return "is a folder, not the nix command"
	case info.Mode()&0o111 == 0:
		return "is a file that no one may run"
	}
	return ""
}

// Load returns the facts of every node that sources name (of the Shard
// only, when it is set), sorted by node name. Facts documents are read
// directly; all other sources go to nix's workers.
//
// Nodes that nix fails on do not stop the others: Load returns the nodes
// it evaluated together with an error that joins a *NodeError for each
// that failed (NodeErrors reads them). Any other error stops the whole
// evaluation, and comes with no nodes.
func (e *Evaluator) Load(ctx context.Context, sources []Source) ([]*facts.Node, error) {
	nodes, _, err := e.LoadShard(ctx, sources)
	return nodes, err
}

// LoadShard is Load, which also says how many nodes the sources have in
// every shard together. A shard may hold none of them; sources that have
// no node at all are an error.
func (e *Evaluator) LoadShard(ctx context.Context, sources []Source) (nodes []*facts.Node, total int, err error) {
	var evaluated []Source
	var mistyped []error // the nodes of facts documents with a wrong type
	for _, s := range sources {
		if s.Kind != SourceFacts {
			evaluated = append(evaluated, s)
			continue
		}
		doc, bad, err := facts.ReadFileEach(s.Path)
		if err != nil {
			return nil, 0, fmt.Errorf("facts %s: %w", s.Display, err)
		}
		total += len(doc.Nodes) + len(bad)
		for _, pe := range bad {
			name := pe.Node
			if name == "" {
				name = fmt.Sprintf("%s[%d]", pe.Where, pe.Index)
			}
			source := pe.Source
			if source == "" {
				source = "facts:" + s.Display
			}
			if e.Shard.Holds(ShardKey(&facts.Node{Name: name, Source: source})) {
				mistyped = append(mistyped, &NodeError{Node: name, Source: source, File: s.Path, Err: pe.Err})
			}
		}
		for _, n := range doc.Nodes {
			if e.Shard.Holds(ShardKey(n)) {
				nodes = append(nodes, n)
				e.rememberLocated(n)
			}
		}
	}
	var failed error
	if len(evaluated) > 0 {
		extracted, all, err := e.extract(ctx, evaluated)
		if _, ok := NodeErrors(err); err != nil && !ok {
			return nil, 0, err
		}
		nodes, failed = append(nodes, extracted...), err
		total += all
	}
	if len(mistyped) > 0 {
		failed = errors.Join(append(mistyped, failed)...)
	}
	if total == 0 && failed == nil {
		return nil, 0, fmt.Errorf("%s gave no nodes: a check of nothing would pass, so name at least one node", describeSources(sources))
	}
	seen := map[string]string{}
	for _, n := range nodes {
		first, ok := seen[n.Name]
		switch {
		case ok && (first == n.Source || sameFileSource(first, n.Source)):
			// The same file twice, or a flake and one of its nodes.
			return nil, 0, fmt.Errorf("node %s is given twice (%s): give each node once", n.Name, n.Source)
		case ok:
			return nil, 0, fmt.Errorf("node %s comes from both %s and %s: give each node once", n.Name, first, n.Source)
		}
		seen[n.Name] = n.Source
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, total, failed
}

// sameFileSource says two sources name one file (file:b.nix and
// file:./b.nix, or the same file by two paths).
func sameFileSource(a, b string) bool {
	pa, okA := strings.CutPrefix(a, "file:")
	pb, okB := strings.CutPrefix(b, "file:")
	if !okA || !okB {
		return false
	}
	ia, errA := os.Stat(pa)
	ib, errB := os.Stat(pb)
	return filepath.Clean(pa) == filepath.Clean(pb) || errA == nil && errB == nil && os.SameFile(ia, ib)
}

// request is what extract.nix takes.
type request struct {
	Sources      []requestSource `json:"sources"`
	K8sPodModule *string         `json:"k8sPodModule"`
	// K8sPodModuleAliases are the other paths of K8sPodModule's file.
	K8sPodModuleAliases []string `json:"k8sPodModuleAliases,omitempty"`
	// ListsProbe is false only when a benchmark measures the probe's cost.
	ListsProbe bool `json:"listsProbe"`
	// Definitions is Evaluator.Definitions.
	Definitions bool `json:"definitions,omitempty"`
	// AnswerMark starts the line of each of a worker's answers
	// (serve.nix).
	AnswerMark string `json:"answerMark"`
}

type requestSource struct {
	Kind    SourceKind `json:"kind"`
	Display string     `json:"display"`
	Ref     string     `json:"ref,omitempty"`
	// Read, when set, is the reference nix reads instead of Ref: a copy
	// of a work tree that nix cannot name (readThroughCopies).
	Read     string  `json:"read,omitempty"`
	Checkout string  `json:"checkout,omitempty"`
	Attr     *string `json:"attr"`
	Path     string  `json:"path,omitempty"`
	Name     string  `json:"name,omitempty"`
}

// The folder of the program (serve.nix, extract.nix, locate.nix) and its
// request reaches nix through the environment, read with builtins.getEnv:
// no quoting of paths into Nix code.
const evalDirEnv = "PODROLES_EXTRACT_DIR"

// evalExpr is the expression that runs program on the request beside it.
func evalExpr(program string) string {
	return `let dir = /. + builtins.getEnv "` + evalDirEnv + `"; in import (dir + "/` + program + `") (builtins.fromJSON (builtins.readFile (dir + "/request.json")))`
}

// Extract evaluates the nodes of flake and file sources (of the Shard, when
// it is set) in nix's workers and returns their facts in the order of the
// sources, a flake's nodes by name. The evaluator remembers where each node
// came from, for Locate.
//
// A node that fails is a *NodeError (of an *EvalError) that names it; the
// other nodes are evaluated all the same and returned beside every failure
// (errors.Join), in the order of the nodes, so that the errors are the same
// whatever Jobs is.
func (e *Evaluator) Extract(ctx context.Context, sources []Source) ([]*facts.Node, error) {
	nodes, _, err := e.extract(ctx, sources)
	return nodes, err
}

// extract is Extract, which also counts the nodes of every shard.
func (e *Evaluator) extract(ctx context.Context, sources []Source) (nodes []*facts.Node, total int, err error) {
	req := request{ListsProbe: !e.withoutListsProbe, Definitions: e.Definitions}
	for _, s := range sources {
		rs, err := requestSourceOf(s)
		if err != nil {
			return nil, 0, err
		}
		req.Sources = append(req.Sources, rs)
	}
	if req.K8sPodModule, err = e.k8sPodModule(); err != nil {
		return nil, 0, err
	}
	req.K8sPodModuleAliases = pathAliases(req.K8sPodModule)
	var out [][]byte
	var outTasks []task // the task of each value of out
	err = e.withWorkers(ctx, &req, sources, func(ctx context.Context, p *pool) []error {
		// The names of a flake's nodes first: a listing evaluates none of
		// them, and tells the shard which of them it holds.
		var lists []task
		for i, s := range sources {
			if s.Kind == SourceFlake && s.Attr == "" {
				lists = append(lists, task{Op: "list", Source: i, label: s.String()})
			}
		}
		listed := p.run(ctx, "listing", lists)
		failed := map[int]error{}
		names := map[int][]string{}
		for j, t := range lists {
			if listed[j].err != nil {
				failed[t.Source] = nodeError(sources[t.Source], nil, listed[j].err)
				continue
			}
			var list []string
			if err := json.Unmarshal(listed[j].value, &list); err != nil {
				failed[t.Source] = nodeError(sources[t.Source], nil, fmt.Errorf("%s: nix listed its nodes as %.200q", sources[t.Source], listed[j].value))
				continue
			}
			names[t.Source] = list
		}

		var tasks []task
		var errs []error
		add := func(i int, attr *string, key, label string) {
			total++
			if e.Shard.Holds(key) {
				tasks = append(tasks, task{Op: "node", Source: i, Attr: attr, label: label})
			}
		}
		for i, s := range sources {
			switch {
			case failed[i] != nil:
				errs = append(errs, failed[i])
			case s.Kind == SourceFile:
				add(i, nil, fileShardKey(s.Display), s.Display)
			case s.Attr != "":
				add(i, &s.Attr, s.Attr, s.Attr)
			default:
				for _, name := range names[i] {
					add(i, &name, name, name)
				}
			}
		}
		for j, o := range p.run(ctx, "evaluating", tasks) {
			s := sources[tasks[j].Source]
			switch {
			case o.err != nil:
				errs = append(errs, nodeError(s, tasks[j].Attr, o.err))
			case !utf8.Valid(o.value):
				errs = append(errs, nodeError(s, tasks[j].Attr, fmt.Errorf("%s: nix printed no JSON: %.200q", s, o.value)))
			default:
				out = append(out, o.value)
				outTasks = append(outTasks, tasks[j])
			}
		}
		return errs
	})
	if _, ok := NodeErrors(err); err != nil && !ok {
		return nil, total, err
	}
	array := gjson.ParseBytes(append(append([]byte("["), bytes.Join(out, []byte(","))...), ']'))
	nodes, bad, parseErr := facts.ParseNodesEach(array, "nix output")
	if parseErr != nil {
		return nil, 0, parseErr
	}
	// A node whose value has the wrong type is reported as a node that
	// failed, beside the others.
	var mistyped []error
	if len(bad) > 0 {
		array = withoutMistyped(out, bad)
	}
	for _, pe := range bad {
		t := outTasks[pe.Index]
		ne := nodeError(sources[t.Source], t.Attr, pe.Err)
		if pe.Node != "" {
			ne.Node = pe.Node
		}
		if ne.Option = pe.Option; pe.Node != "" && pe.Source != "" {
			ne.ref = &facts.NodeRef{Name: pe.Node, Source: pe.Source}
			e.rememberOrigin(*ne.ref, sources[t.Source])
		}
		mistyped = append(mistyped, ne)
	}
	if len(mistyped) > 0 {
		err = errors.Join(append(mistyped, err)...)
	}
	e.remember(sources, array, nodes)
	return nodes, total, err
}

// withoutMistyped is the JSON list of the values of out but those of bad,
// in the order of the nodes that ParseNodesEach read from them.
func withoutMistyped(out [][]byte, bad []*facts.NodeParseError) gjson.Result {
	var kept [][]byte
	for i, v := range out {
		if !slices.ContainsFunc(bad, func(pe *facts.NodeParseError) bool { return pe.Index == i }) {
			kept = append(kept, v)
		}
	}
	return gjson.ParseBytes(append(append([]byte("["), bytes.Join(kept, []byte(","))...), ']'))
}

// requestSourceOf is how extract.nix and locate.nix take a source.
func requestSourceOf(s Source) (requestSource, error) {
	rs := requestSource{Kind: s.Kind, Display: s.Display}
	switch s.Kind {
	case SourceFlake:
		rs.Ref, rs.Checkout = s.Ref, s.Checkout
		if s.Attr != "" {
			rs.Attr = &s.Attr
		}
	case SourceFile:
		rs.Path, rs.Name = s.Path, fileNodeName(s.Path)
	default:
		return rs, fmt.Errorf("%s: nix cannot evaluate a %s source", s, s.Kind)
	}
	return rs, nil
}

// k8sPodModule is the absolute path of the k8s-pod module, or nil.
func (e *Evaluator) k8sPodModule() (*string, error) {
	if e.K8sPodModule == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(e.K8sPodModule)
	if err != nil {
		return nil, fmt.Errorf("k8s-pod module %s: %w", e.K8sPodModule, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("k8s-pod module %s: no such file", e.K8sPodModule)
	}
	if info.IsDir() && !exists(filepath.Join(abs, "default.nix")) {
		return nil, fmt.Errorf("k8s-pod module %s: a folder without default.nix: give the module's file", e.K8sPodModule)
	}
	return &abs, nil
}

// pathAliases are the other paths of the file at abs: with the symbolic
// links of its folders resolved (a checkout reached through a link, which
// nix reads at its real path), and of the file itself (a link to a
// platform's k8s-pod.nix that a host imports by its real path).
func pathAliases(abs *string) []string {
	if abs == nil {
		return nil
	}
	var aliases []string
	add := func(p string, err error) {
		if err == nil && p != *abs && !slices.Contains(aliases, p) {
			aliases = append(aliases, p)
		}
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(*abs)); err == nil {
		add(filepath.Join(dir, filepath.Base(*abs)), nil)
	}
	add(filepath.EvalSymlinks(*abs))
	return aliases
}

// withWorkers runs work on a pool of workers for req, beside nix --version,
// which stops the work when it refuses the nix: the check adds no time to a
// run. Timeout bounds the whole work. The errors work returns are those of
// its tasks, in order: each is read as nix's error about its source and
// node, and a task that never ran for a stopped evaluation is left out.
func (e *Evaluator) withWorkers(ctx context.Context, req *request, sources []Source, work func(context.Context, *pool) []error) error {
	if _, err := e.nixPath(); err != nil {
		return err
	}
	p, err := e.newPool(req)
	if err != nil {
		return err
	}
	defer p.close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(runCtx, e.Timeout)
		defer cancel()
	}
	versionChecked := make(chan error, 1)
	go func() {
		err := e.checkVersion(ctx)
		if err != nil {
			stop()
		}
		versionChecked <- err
	}()
	taskErrs := work(runCtx, p)
	if err := <-versionChecked; err != nil && ctx.Err() == nil {
		return err
	}
	// Nix 2.24 locks in memory what a flake.lock lacks, where 2.8 refuses
	// before it evaluates anything.
	if err := lockNotWritten(p.warnings(), sources); err != nil && ctx.Err() == nil {
		return err
	}
	var errs []error
	notRun := false
	for _, err := range taskErrs {
		if errors.Is(err, errNotRun) {
			notRun = true
			continue
		}
		if ne, ok := err.(*NodeError); ok {
			ne.Err = e.taskError(ctx, ne.Err, sources, p.dir)
			ne.named()
			errs = append(errs, ne)
			continue
		}
		errs = append(errs, e.taskError(ctx, err, sources, p.dir))
	}
	if len(errs) == 0 && notRun {
		// Stopped between two tasks: no node to name.
		return e.evalError(e.stopped(ctx, runCtx), nil, sources, "")
	}
	if notRun || runCtx.Err() != nil {
		// A stopped evaluation may have left nodes out: no report may pass
		// them over, so the errors stop it whole.
		for i, err := range errs {
			if ne, ok := err.(*NodeError); ok {
				errs[i] = ne.Err
			}
		}
	}
	return errors.Join(errs...)
}

// stopped is why runCtx, which ctx's evaluation ran in, ended: a
// timeoutError for the Timeout, else ctx's own error.
func (e *Evaluator) stopped(ctx, runCtx context.Context) error {
	if ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		return &timeoutError{after: e.Timeout}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return runCtx.Err()
}

// taskError reads a task's failure: what nix printed while it worked on the
// task, as evalError reads a failed nix. ownDir is the folder of podroles'
// own Nix files.
func (e *Evaluator) taskError(ctx context.Context, err error, sources []Source, ownDir string) error {
	var failed *taskFailed
	if !errors.As(err, &failed) {
		return err
	}
	runErr := failed.err
	if errors.Is(runErr, context.DeadlineExceeded) && ctx.Err() == nil {
		runErr = &timeoutError{after: e.Timeout}
	}
	read := e.evalError(runErr, failed.stderr, sources, ownDir)
	var ee *EvalError
	if failed.signal != 0 && errors.As(read, &ee) {
		// Killed by another hand than podroles', most often the kernel's
		// when memory ran out: the trace so far says nothing of that.
		ee.Kind, ee.Location = KindEval, ""
		ee.Message = fmt.Sprintf("nix was killed (%s) while it evaluated this node; if the machine ran out of memory, lower --jobs or --max-memory", failed.signal)
	}
	return explainRecursion(read, failed.stderr)
}

// nixArgs are the arguments of every nix that podroles runs for args;
// programDir holds podroles' own files (emptyRegistry among them).
func nixArgs(programDir string, args ...string) []string {
	// Always with --show-trace: without it nix 2.8 prints no frames at all
	// and 2.24 hides the innermost, yet an error thrown in nixpkgs' lib is
	// placed in the user's files by its frames (EvalError.Location). Nix
	// adds the frames only while an error unwinds, so a clean evaluation
	// costs the same (docs/nix-versions.md has the measurement).
	//
	// Nix reaches the network only for what the sources name themselves:
	// a remote flake, or an input that a flake.lock pins and the store
	// lacks. So:
	//   - no binary cache (substituters);
	//   - no global flake registry, which nix downloads to resolve any
	//     flake:NAME (an empty one of ours: nix 2.8 takes "" for a URL);
	//   - --offline, which takes what nix downloaded before as current,
	//     and keeps nix from warning where there is no network.
	// Nix 2.8 and 2.24 know each option. A daemon warns of none to a user
	// it does not trust: it takes an empty substituters from anyone, and
	// is not sent flake-registry.
	return append([]string{"--extra-experimental-features", "nix-command flakes", "--show-trace",
		"--offline", "--option", "substituters", "",
		"--option", "flake-registry", filepath.Join(programDir, emptyRegistry)}, args...)
}

// emptyRegistry is the file of the global flake registry that podroles
// gives nix: a registry with no entry.
const emptyRegistry = "flake-registry.json"

// NixNotFoundError says that the nix command is not installed.
type NixNotFoundError struct {
	Nix string
	// Why, when set, is what is wrong with the path that names it.
	Why string
}

func (e *NixNotFoundError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("--nix %s: %s; give the nix command itself, e.g. --nix /usr/bin/nix", e.Nix, e.Why)
	}
	return fmt.Sprintf("%s not found: install Nix (Debian: apt-get install nix-bin; elsewhere see https://nixos.org/download) or give --nix PATH, or check facts written earlier with --facts FILE", e.Nix)
}

type timeoutError struct{ after time.Duration }

func (e *timeoutError) Error() string {
	if e.after == 0 {
		return "nix was stopped"
	}
	return fmt.Sprintf("nix did not finish within %s; raise --timeout", e.after)
}

func describeSources(sources []Source) string {
	if len(sources) == 1 {
		return sources[0].String()
	}
	return fmt.Sprintf("%d sources", len(sources))
}

// explainRecursion says why nix stopped with an infinite recursion on a node
// whose lists read config.systemd.services (FR-007): extract.nix marks such
// a node before its facts, and on k8s-pod.nix, whose conditions come from
// the lists, its evaluation recurses without end.
func explainRecursion(err error, stderr []byte) error {
	var ee *EvalError
	if !errors.As(err, &ee) || !strings.Contains(ee.Message, "infinite recursion") {
		return err
	}
	var lists []string
	for _, line := range strings.Split(string(stderr), "\n") {
		mark, ok := strings.CutPrefix(line, evalMark)
		if !ok {
			continue
		}
		var at struct {
			Lists []string `json:"lists"`
		}
		if json.Unmarshal([]byte(mark), &at) == nil {
			lists = at.Lists // the last mark is the node nix failed on
		}
	}
	if len(lists) == 0 {
		lists = ee.recursingLists
	}
	if len(lists) > 0 {
		ee.Message = fmt.Sprintf("%s: %s %s config.systemd.services (FR-007), and the node is on k8s-pod.nix, whose conditions on units come from the lists; compute the lists from the application's own options", ee.Message, strings.Join(lists, ", "), map[bool]string{true: "reads", false: "read"}[len(lists) == 1])
	}
	return err
}
