package main

import (
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/docgen"
	"github.com/fediversity/podroles/internal/golden"
)

// The reference pages of docs/ are what the code says: the rules, the
// suites and podroles' commands. make docs rewrites them.
func TestDocs(t *testing.T) {
	golden.Check(t, "../../docs/rules.md", docgen.Rules())
	golden.Check(t, "../../docs/scenarios.md", docgen.Scenarios())
	pages, err := docgen.CLI(newRoot(&cli.Streams{}))
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckDir(t, "../../docs/cli/podroles", ".md", pages)
}
