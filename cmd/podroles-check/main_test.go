package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/fediversity/podroles/cmd/internal/cli"
)

// The root's --help describes every command, and there are the node
// commands alone.
func TestHelpDescribesEveryCommand(t *testing.T) {
	var out bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	r := newRoot(io)
	if code := cli.Main(t.Context(), r, []string{"--help"}, &out); code != cli.ExitOK {
		t.Fatalf("--help: exit %d\n%s", code, out.String())
	}
	var names []string
	for _, c := range r.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		names = append(names, c.Name())
		if !strings.Contains(r.Long, "\n  "+c.Name()+" ") || !strings.Contains(out.String(), c.Name()) {
			t.Errorf("--help does not describe %s:\n%s", c.Name(), out.String())
		}
	}
	if got := strings.Join(names, " "); got != "check facts plan rules" {
		t.Errorf("podroles-check has %s, want check facts plan rules", got)
	}
}

// The checker links only what check, facts, rules and plan need: no
// testing, no Kubernetes client, no container engine's.
func TestLinksOnlyTheNodeCommands(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"testing", "k8s.io/client-go", "github.com/testcontainers/", "github.com/moby/", "github.com/jackc/pgx", "github.com/go-ldap/"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") || strings.HasSuffix(banned, "/") && strings.HasPrefix(pkg, banned) {
				t.Errorf("podroles-check links %s", pkg)
			}
		}
	}
}
