package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fediversity/podroles/facts"
	"github.com/fediversity/podroles/report"
)

// place is what a finding is about, as definitions of the node: the first
// of first that nix can locate gives the finding's location (a role's
// companion, else the service that makes it run lldap), and the
// definitions of also are notes (the other lists that name the same unit).
type place struct {
	first []facts.OptionRef
	also  []facts.OptionRef
}

// at is a place: the first of refs that nix can locate.
func at(refs ...facts.OptionRef) place { return place{first: refs} }

// and adds refs whose definitions are notes of the finding.
func (p place) and(refs ...facts.OptionRef) place {
	p.also = append(slices.Clip(p.also), refs...)
	return p
}

func (p place) refs() []facts.OptionRef { return append(slices.Clip(p.first), p.also...) }

// opt refers to the definitions of the option or value at path.
func opt(path ...string) facts.OptionRef { return facts.OptionRef{Path: path} }

func podRolesPath(path ...string) []string {
	return append([]string{"fediversity", "podRoles"}, path...)
}

func rolePath(role string, path ...string) []string {
	return append(podRolesPath("roles", role), path...)
}

// roleOpt refers to fediversity.podRoles.roles.<role>.<path>.
func roleOpt(role string, path ...string) facts.OptionRef { return opt(rolePath(role, path...)...) }

// secretOpt refers to fediversity.podRoles.roles.<role>.secrets.<file>.<path>.
func secretOpt(role, file string, path ...string) facts.OptionRef {
	return roleOpt(role, append([]string{"secrets", file}, path...)...)
}

// portOpt refers to the entry of a role's ports that gives port.
func portOpt(role string, port facts.Port) facts.OptionRef {
	return facts.OptionRef{Path: rolePath(role, "ports"), Port: &port}
}

// Locator finds where nodes define what option references name: for each
// node of refs, for each of its references, the definitions, in the order
// of the references. Nodes it cannot locate are left out of its answer.
// nixeval's Evaluator.Locate is one.
type Locator func(ctx context.Context, refs map[facts.NodeRef][]facts.OptionRef) (map[facts.NodeRef][][]facts.Definition, error)

// maxNotes bounds the notes of a finding: a unit that a dozen modules
// define needs a few of them to be found, not all.
const maxNotes = 5

// Locate gives the findings of results their locations and notes. It asks
// locate about the nodes with findings only, each reference once, in one
// call: a report without findings costs nothing. Files are shown as paths
// shows them, in the locations and in the findings' messages.
func Locate(ctx context.Context, results []*Result, locate Locator, paths report.Paths) error {
	for _, res := range results {
		for i := range res.Findings {
			res.Findings[i].Message = paths.Text(res.Findings[i].Message)
		}
	}
	refs := map[facts.NodeRef][]facts.OptionRef{}
	index := map[facts.NodeRef]map[string]int{}
	for _, res := range results {
		node := facts.NodeRef{Name: res.Node, Source: res.Source}
		for _, f := range res.Findings {
			for _, r := range f.place.refs() {
				key := refKey(r)
				if index[node] == nil {
					index[node] = map[string]int{}
				}
				if _, ok := index[node][key]; !ok {
					index[node][key] = len(refs[node])
					refs[node] = append(refs[node], r)
				}
			}
		}
	}
	if len(refs) == 0 {
		return nil
	}
	found, err := locate(ctx, refs)
	if err != nil {
		return err
	}
	for _, res := range results {
		node := facts.NodeRef{Name: res.Node, Source: res.Source}
		defsOf := func(r facts.OptionRef) []facts.Definition {
			all := found[node]
			if i, ok := index[node][refKey(r)]; ok && i < len(all) {
				return all[i]
			}
			return nil
		}
		for i := range res.Findings {
			res.Findings[i].locate(defsOf, paths)
		}
	}
	return nil
}

// locate sets the finding's location and notes from the definitions of its
// place.
func (f *Finding) locate(defsOf func(facts.OptionRef) []facts.Definition, paths report.Paths) {
	f.Location, f.Notes = nil, nil
	// The first reference that a module of the host defines; else the
	// first that nix locates, NixOS's own modules included (a unit of a
	// modular service that the host never touched is fixed where the host
	// made the service, not in the module of NixOS that made the unit).
	// The node's own file, the last resort, is no module of the host.
	first := slices.IndexFunc(f.place.first, func(r facts.OptionRef) bool {
		return len(r.Path) > 0 && slices.ContainsFunc(ranked(defsOf(r), false), func(d facts.Definition) bool { return !d.OfNixOS })
	})
	if first < 0 {
		first = 0
	}
	for _, r := range f.place.first[first:] {
		defs := defsOf(r)
		won := ranked(defs, false)
		if len(won) == 0 {
			continue
		}
		loc := won[0].Location
		loc.File = paths.File(loc.File)
		f.Location = &loc
		for _, d := range won[1:] {
			f.note(paths, d, "%s is also defined here", r.Option())
		}
		for _, d := range ranked(defs, true) {
			f.note(paths, d, "%s is also defined here with %s, which lost to %s", r.Option(), facts.PriorityName(d.Priority), facts.PriorityName(won[0].Priority))
		}
		break
	}
	for _, r := range f.place.also {
		for _, d := range ranked(defsOf(r), false) {
			f.note(paths, d, "see also %s, defined here", r.Option())
		}
	}
}

func (f *Finding) note(paths report.Paths, d facts.Definition, format string, args ...any) {
	if len(f.Notes) == maxNotes {
		return
	}
	loc := d.Location
	loc.File = paths.File(loc.File)
	f.Notes = append(f.Notes, Note{Message: fmt.Sprintf(format, args...), Location: &loc})
}

// ranked returns the definitions that won (or with lost, those that lost):
// the host's before NixOS's own, and of each those nix knows the line of
// first.
func ranked(defs []facts.Definition, lost bool) []facts.Definition {
	var out []facts.Definition
	for _, d := range defs {
		if d.Lost == lost && d.File != "" {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b facts.Definition) int {
		if a.OfNixOS != b.OfNixOS {
			return boolOrder(a.OfNixOS) - boolOrder(b.OfNixOS)
		}
		return boolOrder(a.Line == 0) - boolOrder(b.Line == 0)
	})
	return out
}

func boolOrder(b bool) int {
	if b {
		return 1
	}
	return 0
}

func refKey(r facts.OptionRef) string {
	key := strings.Join(r.Path, "\x00") + "\x01" + r.Holds
	if r.Port != nil {
		key += fmt.Sprintf("\x01%d/%s", r.Port.Port, r.Port.Protocol)
	}
	return key
}
