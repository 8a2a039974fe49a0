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

func init() {
	for _, r := range rules {
		text, err := explainFiles.ReadFile("explain/" + r.ID + ".md")
		if err != nil {
			panic(fmt.Sprintf("checks: rule %s has no explain/%s.md", r.ID, r.ID))
		}
		r.Long = strings.TrimSpace(string(text))
	}
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
