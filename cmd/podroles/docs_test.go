package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/cmd/internal/docgen"
	"github.com/fediversity/podroles/internal/golden"
)

// The reference pages of docs/ are what the code says: the rules, the
// suites and podroles' commands. make docs rewrites them.
func TestDocs(t *testing.T) {
	golden.Check(t, "../../docs/rules.md", docgen.Rules())
	suites := docgen.Scenarios()
	golden.Check(t, "../../docs/scenarios.md", suites)
	pages, err := docgen.CLI(newRoot(&cli.Streams{}))
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckDir(t, "../../docs/cli/podroles", ".md", pages)

	// docs/scenarios.md has the suites in the order scenarios list shows
	// them.
	var out bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	if code := cli.Main(context.Background(), newRoot(io), []string{"scenarios", "list"}, &out); code != cli.ExitOK {
		t.Fatalf("scenarios list: exit %d\n%s", code, out.String())
	}
	var listed, documented []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, " ") {
			listed = append(listed, strings.Fields(line)[0])
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllSubmatch(suites, -1) {
		documented = append(documented, string(m[1]))
	}
	if !slices.Equal(listed, documented) {
		t.Errorf("scenarios list shows the suites %v, docs/scenarios.md %v", listed, documented)
	}
}
