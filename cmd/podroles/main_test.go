package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/clitest"
)

// The root's --help describes every command podroles has; the pod
// supervisor, which env up runs, is hidden.
func TestHelpDescribesEveryCommand(t *testing.T) {
	names := clitest.Help(t, newRoot)
	for _, want := range []string{"check", "facts", "rules", "plan", "scenarios", "env"} {
		if !slices.Contains(names, want) {
			t.Errorf("podroles lacks the command %s: %v", want, names)
		}
	}
	if c, _, err := newRoot(&cli.Streams{}).Find([]string{"pod"}); err != nil || !c.Hidden {
		t.Errorf("the pod supervisor is a hidden command: %v", err)
	}
}

// The shipped binary links no testing: test helpers live in packages that
// no command imports (harness/testenv, cmd/internal/clitest).
func TestLinksNoTesting(t *testing.T) {
	for _, pkg := range clitest.Deps(t) {
		if pkg == "testing" || strings.HasPrefix(pkg, "github.com/testcontainers/") {
			t.Errorf("podroles links %s", pkg)
		}
	}
}
