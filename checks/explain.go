package checks

import (
	"embed"
	"fmt"
	"strings"
)

// The long text of each rule is a Markdown file of explain/, named by the
// rule's ID, so that it reads and diffs as the reference text it is (the
// docs and `podroles rules` are generated from it).
//
//go:embed explain/*.md
var explainFiles embed.FS

// Long is the reference text of the rule, in Markdown: why the spec
// refuses it, exactly what the rule counts and what it does not, and how
// to fix a node. Paragraphs are separated by a blank line. It is read
// when asked: a check never needs it, and every start would pay for all.
func (r *Rule) Long() string {
	text, err := explainFiles.ReadFile("explain/" + r.ID + ".md")
	if err != nil {
		// The tests read every rule's text.
		panic(fmt.Sprintf("checks: rule %s has no explain/%s.md", r.ID, r.ID))
	}
	return strings.TrimSpace(string(text))
}

// Lookup returns the rule of an ID (PR101, any case) or a name
// (unknown-unit), or nil when there is none.
func Lookup(idOrName string) *Rule {
	for _, r := range rules {
		if strings.EqualFold(r.ID, idOrName) || r.Name == idOrName {
			return r
		}
	}
	return nil
}
