package facts

import (
	"fmt"
	"strings"
)

// Location is a place in a Nix file: where a node defines an option.
type Location struct {
	// File is the file's path: relative to the directory the report is
	// read from when the file is inside it, else absolute.
	File string `json:"file"`
	// Line and Column count from 1; 0 when nix knows only the file.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
}

// String is FILE:LINE:COLUMN, or as much of it as is known.
func (l Location) String() string {
	switch {
	case l.Line == 0:
		return l.File
	case l.Column == 0:
		return fmt.Sprintf("%s:%d", l.File, l.Line)
	}
	return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column)
}

// NodeRef names a node among those of one run: by its name and its source,
// since checks of fixtures or of several flakes may meet one name twice.
type NodeRef struct {
	Name   string
	Source string
}

// Ref is the node's NodeRef.
func (n *Node) Ref() NodeRef { return NodeRef{Name: n.Name, Source: n.Source} }

// OptionRef names the definitions that a finding is about: those of an
// option, or of a value below one (a role's units under the option
// fediversity.podRoles.roles).
type OptionRef struct {
	// Path is the attribute path from the node's config, e.g.
	// fediversity podRoles roles worker units.
	Path []string `json:"path"`
	// Holds, when set, keeps the definitions whose list holds this name:
	// the one that wrote a wrong unit name into a list.
	Holds string `json:"holds,omitempty"`
	// Port, when set, keeps the definitions whose list of ports has this
	// entry, and points at the entry.
	Port *Port `json:"port,omitempty"`
}

// Option writes the path as Nix writes it: fediversity.podRoles.roles."2fa".units.
func (r OptionRef) Option() string { return OptionPath(r.Path...) }

// Definition is one definition of what an OptionRef names.
type Definition struct {
	Location
	// Priority is the definition's mkOverride priority: 100 for a plain
	// definition, 1000 for mkDefault, 50 for mkForce.
	Priority int `json:"priority"`
	// Lost is true for a definition that lost to one of a higher priority
	// (a lower number), so that its value is not the node's.
	Lost bool `json:"lost,omitempty"`
	// OfNixOS is true for a definition in one of NixOS's own modules
	// (under modulesPath), not in the host's: the unit NixOS makes of a
	// modular service is fixed in the host, so a finding prefers the
	// host's definitions.
	OfNixOS bool `json:"ofNixOS,omitempty"`
}

// The priorities that nixpkgs' lib names.
const (
	PriorityForce         = 50
	PriorityPlain         = 100
	PriorityDefault       = 1000
	PriorityOptionDefault = 1500
)

// PriorityName says how a definition of this priority is written.
func PriorityName(p int) string {
	switch p {
	case 10:
		return "mkVMOverride (priority 10)"
	case PriorityForce:
		return "mkForce (priority 50)"
	case 60:
		return "mkImageMediaOverride (priority 60)"
	case PriorityPlain:
		return "a plain definition (priority 100)"
	case PriorityDefault:
		return "mkDefault (priority 1000)"
	case PriorityOptionDefault:
		return "mkOptionDefault (priority 1500)"
	}
	return fmt.Sprintf("mkOverride %d", p)
}

// OptionPath joins attribute names into an option path, each quoted where
// Nix needs quotes: fediversity.podRoles.roles."2fa".units.
func OptionPath(names ...string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = AttrName(n)
	}
	return strings.Join(quoted, ".")
}

// OptionPathOf reads back a path that OptionPath wrote, up to its first
// list index ("a.b[2].c" is a.b: the list's option holds the entry).
func OptionPathOf(option string) []string {
	var names []string
	var name strings.Builder
	quoted := false
	for i := 0; i < len(option); i++ {
		c := option[i]
		switch {
		case quoted && c == '\\' && i+1 < len(option):
			i++
			switch option[i] {
			case 'n':
				name.WriteByte('\n')
			case 'r':
				name.WriteByte('\r')
			case 't':
				name.WriteByte('\t')
			default:
				name.WriteByte(option[i])
			}
		case c == '"':
			quoted = !quoted
		case quoted:
			name.WriteByte(c)
		case c == '.' || c == '[':
			names = append(names, name.String())
			name.Reset()
			if c == '[' {
				return names
			}
		default:
			name.WriteByte(c)
		}
	}
	return append(names, name.String())
}

// nixKeywords are the words that Nix's grammar reserves; as attribute names
// they need quotes. (or is a keyword too, but Nix reads it as a name.)
var nixKeywords = map[string]bool{"if": true, "then": true, "else": true, "assert": true, "with": true, "let": true, "in": true, "rec": true, "inherit": true}

// AttrName writes a Nix attribute name as it stands in an option path:
// bare when it is a Nix identifier ([A-Za-z_][A-Za-z0-9_'-]*, not a
// keyword), else as a Nix string ("2fa", "db.env").
func AttrName(s string) string {
	if isIdentifier(s) {
		return s
	}
	return NixString(s)
}

func isIdentifier(s string) bool {
	if s == "" || nixKeywords[s] {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || (c < '0' || c > '9') && c != '\'' && c != '-') {
			return false
		}
	}
	return true
}

// NixString writes s as a Nix string literal: ", \ and ${ escaped, and the
// line ends and tabs that Nix has escapes for.
func NixString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			b.WriteString("\\$")
		case c == '\n':
			b.WriteString("\\n")
		case c == '\r':
			b.WriteString("\\r")
		case c == '\t':
			b.WriteString("\\t")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
