package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
)

// The root's --help describes every command the binary has, hidden ones
// aside, and each command's own --help works.
func TestHelpDescribesEveryCommand(t *testing.T) {
	var out bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	r := newRoot(io)
	if code := cli.Main(t.Context(), r, []string{"--help"}, &out); code != cli.ExitOK {
		t.Fatalf("--help: exit %d\n%s", code, out.String())
	}
	help := out.String()
	var names []string
	for _, c := range r.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		names = append(names, c.Name())
		if !strings.Contains(r.Long, "\n  "+c.Name()+" ") {
			t.Errorf("the root's description does not describe %s:\n%s", c.Name(), r.Long)
		}
		if !strings.Contains(help, c.Name()) {
			t.Errorf("--help does not list %s", c.Name())
		}
	}
	for _, want := range []string{"check", "facts", "rules", "plan", "scenarios", "env"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("podroles lacks the command %s: %v", want, names)
		}
	}
	if c, _, err := r.Find([]string{"pod"}); err != nil || !c.Hidden {
		t.Errorf("the pod supervisor is a hidden command: %v", err)
	}
}

// The shipped binary links no testing: test helpers live in packages that
// no command imports (vmtests/vmtest).
func TestLinksNoTesting(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "testing" || strings.HasPrefix(pkg, "github.com/testcontainers/") {
			t.Errorf("podroles links %s", pkg)
		}
	}
}
