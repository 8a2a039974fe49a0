package nixeval

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/tidwall/gjson"
)

// origin is where a node that Extract read came from.
type origin struct {
	source Source
	// attr is the node's attribute under a flake's nixosConfigurations.
	attr string
	// onK8sPod is true when extraction read the node extended with the
	// k8s-pod module: the locations must come from the same system.
	onK8sPod bool
}

// remember records the origin of each node of an extraction: extract.nix
// gives each the index of its source.
func (e *Evaluator) remember(sources []Source, out gjson.Result, nodes []*facts.Node) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.origins == nil {
		e.origins = map[facts.NodeRef]origin{}
	}
	for j, v := range out.Array() {
		i := v.Get("origin")
		if j >= len(nodes) || i.Type != gjson.Number || int(i.Int()) < 0 || int(i.Int()) >= len(sources) {
			continue
		}
		n, s := nodes[j], sources[i.Int()]
		o := origin{source: s, onK8sPod: e.K8sPodModule != "" && (n.ListsProbe == nil || !n.ListsProbe.K8sPodModuleSkipped)}
		if s.Kind == SourceFlake {
			o.attr = n.Name
		}
		e.origins[n.Ref()] = o
	}
}

// rememberOrigin records the origin of a node that extraction read but
// that has a value of the wrong type, so that LocateFailures can place it.
func (e *Evaluator) rememberOrigin(ref facts.NodeRef, s Source) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.origins == nil {
		e.origins = map[facts.NodeRef]origin{}
	}
	o := origin{source: s, onK8sPod: e.K8sPodModule != ""}
	if s.Kind == SourceFlake {
		o.attr = ref.Name
	}
	e.origins[ref] = o
}

// LocateFailures places each failure of a node whose value has the wrong
// type at the definition of that value, where nix knows it. A failure
// that cannot be placed keeps the place it has.
func (e *Evaluator) LocateFailures(ctx context.Context, failed []*NodeError) error {
	queries := map[facts.NodeRef][]facts.OptionRef{}
	for _, ne := range failed {
		if ne.ref != nil && len(ne.Option) > 0 {
			queries[*ne.ref] = []facts.OptionRef{{Path: ne.Option}}
		}
	}
	if len(queries) == 0 {
		return nil
	}
	found, err := e.Locate(ctx, queries)
	for _, ne := range failed {
		if ne.ref == nil {
			continue
		}
		if defs := found[*ne.ref]; len(defs) > 0 && len(defs[0]) > 0 {
			loc := defs[0][0].Location
			ne.Defined = &loc
		}
	}
	return err
}

// rememberLocated keeps the definitions that a node of a facts document
// carries, for Locate.
func (e *Evaluator) rememberLocated(n *facts.Node) {
	if len(n.Definitions) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.located == nil {
		e.located = map[facts.NodeRef][]facts.Located{}
	}
	e.located[n.Ref()] = n.Definitions
}

// fromFacts answers the queries of a node of a facts document from the
// definitions it carries: a reference that it does not carry has none.
func fromFacts(located []facts.Located, queries []facts.OptionRef) [][]facts.Definition {
	out := make([][]facts.Definition, len(queries))
	for i, q := range queries {
		for _, l := range located {
			if slices.Equal(l.Path, q.Path) && l.Holds == q.Holds && samePort(l.Port, q.Port) {
				out[i] = l.Defs
				break
			}
		}
	}
	return out
}

func samePort(a, b *facts.Port) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// locateNode is a node that locate.nix is asked about.
type locateNode struct {
	Source   int               `json:"source"`
	Attr     string            `json:"attr,omitempty"`
	OnK8sPod bool              `json:"onK8sPod"`
	Queries  []facts.OptionRef `json:"queries"`
	// ReadModules lets locate.nix read a module-system node's modules
	// again, for the positions of options' own names and the definitions
	// that lost.
	ReadModules bool `json:"readModules"`
}

// Locate finds where nodes define what option references name: for each
// node in queries, for each of its references, the definitions, in the
// order of the references. It is podroles' second, lazy pass, for the nodes
// asked about only, each evaluated again as Extract read it, forcing
// nothing but the definitions asked for; a caller asks only about nodes
// with findings, so a clean node costs nothing more. The nodes go to
// workers as in Extract, one node a task.
//
// Only nodes that this evaluator's Extract read can be located, and those
// of facts documents that carry definitions (lib.mkCheck's, the node
// module's), from them alone; the others are left out of the answer. Files in the store
// copy of a local flake's source are given as the checkout's files; every
// file is an absolute path.
func (e *Evaluator) Locate(ctx context.Context, queries map[facts.NodeRef][]facts.OptionRef) (map[facts.NodeRef][][]facts.Definition, error) {
	e.mu.Lock()
	var names []facts.NodeRef
	found := make(map[facts.NodeRef][][]facts.Definition, len(queries))
	for name := range queries {
		if _, ok := e.origins[name]; ok && len(queries[name]) > 0 {
			names = append(names, name)
		} else if located, ok := e.located[name]; ok {
			found[name] = fromFacts(located, queries[name])
		}
	}
	slices.SortFunc(names, func(a, b facts.NodeRef) int { return strings.Compare(a.Name+"\x00"+a.Source, b.Name+"\x00"+b.Source) })
	origins := make([]origin, len(names))
	for i, name := range names {
		origins[i] = e.origins[name]
	}
	e.mu.Unlock()

	req := request{}
	var sources []Source
	index := map[Source]int{}
	var tasks []task
	// asking[i] is the task of names[i], or -1 when it needs no nix.
	asking := make([]int, len(names))
	for i, name := range names {
		o := origins[i]
		// The node's own file needs no nix.
		asked := slices.DeleteFunc(slices.Clone(queries[name]), func(r facts.OptionRef) bool { return len(r.Path) == 0 })
		asking[i] = -1
		if len(asked) == 0 {
			continue
		}
		at, ok := index[o.source]
		if !ok {
			rs, err := requestSourceOf(o.source)
			if err != nil {
				return nil, err
			}
			at = len(sources)
			index[o.source] = at
			sources = append(sources, o.source)
			req.Sources = append(req.Sources, rs)
		}
		asking[i] = len(tasks)
		tasks = append(tasks, task{Op: "locate", Node: &locateNode{Source: at, Attr: o.attr, OnK8sPod: o.onK8sPod, Queries: asked, ReadModules: true}, label: name.Name})
	}
	answers := make([]gjson.Result, len(tasks))
	if len(tasks) > 0 {
		var err error
		if req.K8sPodModule, err = e.k8sPodModule(); err != nil {
			return nil, err
		}
		req.K8sPodModuleAliases = pathAliases(req.K8sPodModule)
		err = e.withWorkers(ctx, &req, sources, func(ctx context.Context, p *pool) []error {
			out := p.run(ctx, "locating", tasks)
			// Reading the modules again forces a little more than the
			// module system did; should that fail for a node, what options
			// keep still gives the files and the positions below them.
			var again []task
			var at []int
			for j, o := range out {
				if o.err != nil && ctx.Err() == nil {
					t := tasks[j]
					n := *t.Node
					n.ReadModules = false
					t.Node = &n
					again = append(again, t)
					at = append(at, j)
				}
			}
			for k, o := range p.run(ctx, "locating", again) {
				out[at[k]] = o
			}
			var errs []error
			for j, o := range out {
				if o.err != nil {
					errs = append(errs, o.err)
					continue
				}
				answers[j] = gjson.ParseBytes(o.value)
			}
			return errs
		})
		if err != nil {
			return nil, fmt.Errorf("locate the definitions: %w", err)
		}
	}

	for i, name := range names {
		var answer gjson.Result
		if asking[i] >= 0 {
			answer = answers[asking[i]]
		}
		root := answer.Get("root").String()
		answered := answer.Get("queries").Array()
		var perQuery [][]facts.Definition
		for _, r := range queries[name] {
			if len(r.Path) == 0 {
				perQuery = append(perQuery, origins[i].home())
				continue
			}
			if len(answered) == 0 {
				return nil, fmt.Errorf("locate the definitions: nix answered fewer queries than asked for node %s", name)
			}
			q := answered[0]
			answered = answered[1:]
			defs := []facts.Definition{}
			for _, d := range q.Array() {
				defs = append(defs, facts.Definition{
					Location: facts.Location{
						File:   checkoutFile(d.Get("file").String(), root, origins[i].source.Checkout),
						Line:   int(d.Get("line").Int()),
						Column: int(d.Get("column").Int()),
					},
					Priority: int(d.Get("priority").Int()),
					Lost:     d.Get("lost").Bool(),
					OfNixOS:  d.Get("ofNixOS").Bool(),
				})
			}
			perQuery = append(perQuery, defs)
		}
		found[name] = perQuery
	}
	return found, nil
}

// checkoutFile gives a file of the store copy of a flake's source (root) as
// the file of the same relative path in the local checkout it was copied
// from, so that editors and CI annotations land on the file the user edits.
func checkoutFile(file, root, checkout string) string {
	if root == "" || checkout == "" {
		return file
	}
	if rel, ok := strings.CutPrefix(file, root+"/"); ok {
		return filepath.Join(checkout, rel)
	}
	return file
}

// home is the node's own file, where a finding that nix cannot place in
// a definition belongs: the file of a file source, the flake.nix of a local
// flake.
func (o origin) home() []facts.Definition {
	var file string
	switch {
	case o.source.Kind == SourceFile:
		file = o.source.Path
	case o.source.Kind == SourceFlake && o.source.Checkout != "":
		dir := ""
		if _, query, ok := strings.Cut(o.source.Ref, "?"); ok {
			if q, err := url.ParseQuery(query); err == nil {
				dir = q.Get("dir")
			}
		}
		file = filepath.Join(o.source.Checkout, dir, "flake.nix")
	default:
		return nil
	}
	return []facts.Definition{{Location: facts.Location{File: file}, Priority: facts.PriorityPlain}}
}
