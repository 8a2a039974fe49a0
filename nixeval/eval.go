// Package nixeval is podroles' bridge to nix: it evaluates NixOS nodes with
// the real nix (a flake's nixosConfigurations, .nix files, many nodes in one
// process) and fills the facts model of package facts from what nix prints.
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
	"syscall"
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

// Evaluator runs nix. The zero value runs "nix" from PATH with no timeout.
type Evaluator struct {
	// Nix is the nix command, a name looked up in PATH or a path.
	Nix string
	// Timeout bounds one nix process; zero means none.
	Timeout time.Duration
	// K8sPodModule, when set, is a module that every NixOS system is
	// extended with (extendModules) before extraction: the node as the
	// k8s method evaluates it, on k8s-pod.nix.
	K8sPodModule string

	// mu guards origins: where each node that Extract read came from, for
	// Locate.
	mu      sync.Mutex
	origins map[facts.NodeRef]origin

	// withoutListsProbe skips the FR-007 probe, for the benchmark that
	// measures what the probe costs; users always have it.
	withoutListsProbe bool

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

// checkVersion runs `nix --version` the first time it is called and refuses
// a nix older than OldestNix. A version it cannot read (a wrapper that prints
// something else) is let through: the evaluation then says what is wrong.
func (e *Evaluator) checkVersion(ctx context.Context) error {
	e.versionOnce.Do(func() {
		path, err := e.nixPath()
		if err != nil {
			e.versionErr = err
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
		if err != nil {
			e.versionErr = fmt.Errorf("%s --version: %v: %s", e.nixName(), err, strings.TrimSpace(stderr.String()))
			return
		}
		v, err := nixversion.FromOutput(string(out))
		if err == nil && v.Less(OldestNix) {
			e.versionErr = &NixTooOldError{Nix: e.nixName(), Version: v}
		}
	})
	return e.versionErr
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
		return "", &NixNotFoundError{Nix: e.nixName()}
	}
	return path, nil
}

// Load returns the facts of every node that sources name, sorted by node
// name. Facts documents are read directly; all other sources go to one nix
// process together.
func (e *Evaluator) Load(ctx context.Context, sources []Source) ([]*facts.Node, error) {
	var nodes []*facts.Node
	var evaluated []Source
	for _, s := range sources {
		if s.Kind != SourceFacts {
			evaluated = append(evaluated, s)
			continue
		}
		doc, err := facts.ReadFile(s.Path)
		if err != nil {
			return nil, fmt.Errorf("facts %s: %w", s.Display, err)
		}
		nodes = append(nodes, doc.Nodes...)
	}
	if len(evaluated) > 0 {
		extracted, err := e.Extract(ctx, evaluated)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, extracted...)
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("%s gave no nodes: a check of nothing would pass, so name at least one node", describeSources(sources))
	}
	seen := map[string]string{}
	for _, n := range nodes {
		if first, ok := seen[n.Name]; ok {
			return nil, fmt.Errorf("node %s comes from both %s and %s: give each node once", n.Name, first, n.Source)
		}
		seen[n.Name] = n.Source
	}
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

// request is what extract.nix takes.
type request struct {
	Sources      []requestSource `json:"sources"`
	K8sPodModule *string         `json:"k8sPodModule"`
	// K8sPodModuleAliases are the other paths of K8sPodModule's file.
	K8sPodModuleAliases []string `json:"k8sPodModuleAliases,omitempty"`
	// ListsProbe is false only when a benchmark measures the probe's cost.
	ListsProbe bool `json:"listsProbe"`
}

type requestSource struct {
	Kind     SourceKind `json:"kind"`
	Display  string     `json:"display"`
	Ref      string     `json:"ref,omitempty"`
	Checkout string     `json:"checkout,omitempty"`
	Attr     *string    `json:"attr"`
	Path     string     `json:"path,omitempty"`
	Name     string     `json:"name,omitempty"`
}

// The folder of the program (extract.nix, locate.nix) and its request
// reaches nix through the environment, read with builtins.getEnv: no
// quoting of paths into Nix code.
const evalDirEnv = "PODROLES_EXTRACT_DIR"

// evalExpr is the expression that runs program on the request beside it.
func evalExpr(program string) string {
	return `let dir = /. + builtins.getEnv "` + evalDirEnv + `"; in import (dir + "/` + program + `") (builtins.fromJSON (builtins.readFile (dir + "/request.json")))`
}

// Extract evaluates the nodes of flake and file sources in one nix process.
// The evaluator remembers where each node came from, for Locate.
func (e *Evaluator) Extract(ctx context.Context, sources []Source) ([]*facts.Node, error) {
	req := request{ListsProbe: !e.withoutListsProbe}
	for _, s := range sources {
		rs, err := requestSourceOf(s)
		if err != nil {
			return nil, err
		}
		req.Sources = append(req.Sources, rs)
	}
	var err error
	if req.K8sPodModule, err = e.k8sPodModule(); err != nil {
		return nil, err
	}
	req.K8sPodModuleAliases = pathAliases(req.K8sPodModule)
	out, err := e.evalJSON(ctx, "extract.nix", req, sources)
	if err != nil {
		return nil, err
	}
	nodes, err := facts.ParseNodes(out, "nix output")
	if err != nil {
		return nil, err
	}
	e.remember(sources, out, nodes)
	return nodes, nil
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

// evalJSON runs program, one of the Nix files of this package, on req in
// one nix process, and returns what it printed. sources are those the
// request names, to say which one an error belongs to.
func (e *Evaluator) evalJSON(ctx context.Context, program string, req any, sources []Source) (gjson.Result, error) {
	reqJSON, err := json.Marshal(req)
	if err != nil {
		return gjson.Result{}, err
	}
	dir, err := os.MkdirTemp("", "podroles-extract-")
	if err != nil {
		return gjson.Result{}, fmt.Errorf("extract: %w", err)
	}
	defer os.RemoveAll(dir)
	// The request goes in a file: an environment variable holds 128 KiB at
	// most, a few hundred file names.
	for name, text := range map[string][]byte{"facts.nix": FactsNix, "node.nix": nodeNix, "extract.nix": extractNix, "locate.nix": locateNix, "request.json": reqJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), text, 0o644); err != nil {
			return gjson.Result{}, fmt.Errorf("extract: %w", err)
		}
	}
	// nix --version runs beside the evaluation, which it stops when it
	// refuses the nix: the check adds no time to a run.
	evalCtx, stopEval := context.WithCancel(ctx)
	defer stopEval()
	versionChecked := make(chan error, 1)
	go func() {
		err := e.checkVersion(ctx)
		if err != nil {
			stopEval()
		}
		versionChecked <- err
	}()
	stdout, stderr, runErr := e.run(evalCtx, []string{"eval", "--json", "--impure", "--expr", evalExpr(program)}, evalDirEnv+"="+dir)
	if err := <-versionChecked; err != nil {
		if ctx.Err() != nil {
			return gjson.Result{}, e.evalError(ctx.Err(), nil, sources, "")
		}
		return gjson.Result{}, err
	}
	// Nix 2.24 locks in memory what a flake.lock lacks, where 2.8 refuses
	// before it evaluates anything.
	if err := lockNotWritten(stderr, sources); err != nil && ctx.Err() == nil {
		return gjson.Result{}, err
	}
	if runErr != nil {
		// Nix prints the JSON it has so far before it fails: stdout is
		// never read then.
		return gjson.Result{}, explainRecursion(e.evalError(runErr, stderr, sources, dir), stderr)
	}
	if !gjson.ValidBytes(stdout) || !utf8.Valid(stdout) {
		return gjson.Result{}, fmt.Errorf("nix printed no JSON: %.200q", stdout)
	}
	return gjson.ParseBytes(stdout), nil
}

// run starts nix in its own process group and kills the whole group when
// ctx ends or the timeout passes, so that no fetcher it started outlives it.
func (e *Evaluator) run(ctx context.Context, args []string, env ...string) (stdout, stderr []byte, err error) {
	path, err := e.nixPath()
	if err != nil {
		return nil, nil, err
	}
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	// Always with --show-trace: without it nix 2.8 prints no frames at all
	// and 2.24 hides the innermost, yet an error thrown in nixpkgs' lib is
	// placed in the user's files by its frames (EvalError.Location). Nix
	// adds the frames only while an error unwinds, so a clean evaluation
	// costs the same (docs/nix-versions.md has the measurement).
	full := append([]string{"--extra-experimental-features", "nix-command flakes", "--show-trace"}, args...)
	cmd := exec.CommandContext(ctx, path, full...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return nil, errOut.Bytes(), &timeoutError{after: e.Timeout}
		}
		return nil, errOut.Bytes(), ctxErr
	}
	return out.Bytes(), errOut.Bytes(), err
}

// NixNotFoundError says that the nix command is not installed.
type NixNotFoundError struct{ Nix string }

func (e *NixNotFoundError) Error() string {
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
