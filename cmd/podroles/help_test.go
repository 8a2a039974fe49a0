package main

import (
	"testing"

	"github.com/fediversity/podroles/cmd/internal/clitest"
	"github.com/fediversity/podroles/internal/golden"
)

// TestGoldenHelp: what --help prints for podroles and each of its
// commands is in testdata/help; make docs rewrites it.
func TestGoldenHelp(t *testing.T) {
	golden.CheckDir(t, "testdata/help", ".txt", clitest.HelpPages(t, newRoot))
}
