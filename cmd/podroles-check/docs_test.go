package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/docgen"
	"github.com/fediversity/podroles/internal/golden"
)

var parentLine = regexp.MustCompile(`(?m)^\* \[podroles\]\(podroles\.md\).*\n`)

// docs/cli/podroles-check.md lists the checker's commands, whose pages
// are podroles's: each command's page, generated from the checker, is
// podroles's page but for the binary's name. make docs rewrites it.
func TestDocs(t *testing.T) {
	root := newRoot(&cli.Streams{})
	pages, err := docgen.CLI(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range pages {
		if name == "podroles-check.md" {
			continue
		}
		full := strings.Replace(name, "podroles-check_", "podroles_", 1)
		want, err := os.ReadFile(filepath.Join("../../docs/cli/podroles", full))
		if err != nil {
			t.Errorf("%s: podroles has no page %s: %v", name, full, err)
			continue
		}
		// The link back to the root names the root's own summary.
		got := parentLine.ReplaceAll(bytes.ReplaceAll(page, []byte("podroles-check"), []byte("podroles")), nil)
		if !bytes.Equal(got, parentLine.ReplaceAll(want, nil)) {
			t.Errorf("podroles-check's page %s differs from podroles's %s: the commands must be the same", name, full)
		}
	}
	golden.Check(t, "../../docs/cli/podroles-check.md", docgen.Checker(root, "podroles"))
}
