package main

import (
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/docgen"
	"github.com/fediversity/podroles/internal/golden"
)

// docs/cli/podroles-check is what podroles-check's commands say. make docs
// rewrites it.
func TestDocs(t *testing.T) {
	pages, err := docgen.CLI(newRoot(&cli.Streams{}))
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckDir(t, "../../docs/cli/podroles-check", ".md", pages)
}
