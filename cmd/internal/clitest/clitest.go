// Package clitest runs podroles' commands in tests, in the manner of
// net/http/httptest. It runs them under a root of their own, with the
// streams captured, as a binary's main runs them. It imports testing, so
// no command imports it.
package clitest

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/cmd/internal/cli"
	"github.com/fediversity/podroles/internal/nixtest"
)

// Result is what a run gave: the exit code and the two streams.
type Result struct {
	Code        int
	Out, ErrOut string
}

// Run runs args under a root named podroles with the commands commands
// makes, and returns the exit code and what was written.
func Run(t testing.TB, commands func(*cli.Streams) []*cobra.Command, args ...string) Result {
	t.Helper()
	var out, errOut bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	root := cli.NewRoot(cli.Root{Use: "podroles"}, io, commands(io)...)
	code := cli.Main(context.Background(), root, withTestNix(t, root, args), &errOut)
	return Result{code, out.String(), errOut.String()}
}

// withTestNix gives a command that takes --nix the nix the tests run
// (internal/nixtest), right after the command's name, so that a --nix of
// the test's own, later in args, still wins.
func withTestNix(t testing.TB, root *cobra.Command, args []string) []string {
	t.Helper()
	cmd, _, err := root.Find(args)
	if err != nil || cmd.Flags().Lookup("nix") == nil {
		return args
	}
	depth := strings.Count(cmd.CommandPath(), " ")
	return append(append(slices.Clip(args[:depth]), "--nix", nixtest.Nix(t)), args[depth:]...)
}

// Help runs a root's --help, and fails the test unless every command the
// root has, but hidden ones, is described in its long text and listed.
// It returns the names of the commands.
func Help(t testing.TB, newRoot func(*cli.Streams) *cobra.Command) []string {
	t.Helper()
	var out bytes.Buffer
	io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	root := newRoot(io)
	if code := cli.Main(context.Background(), root, []string{"--help"}, &out); code != cli.ExitOK {
		t.Fatalf("--help: exit %d\n%s", code, out.String())
	}
	var names []string
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		names = append(names, c.Name())
		if !strings.Contains(root.Long, "\n  "+c.Name()+" ") || !strings.Contains(out.String(), c.Name()) {
			t.Errorf("%s --help does not describe %s:\n%s", root.Name(), c.Name(), out.String())
		}
	}
	return names
}

// HelpPages runs --help of a root and of every command under it, hidden
// ones included, but cobra's own help and completion, and returns what
// each printed by file name: the command's path with spaces as
// underscores, and .txt.
func HelpPages(t testing.TB, newRoot func(*cli.Streams) *cobra.Command) map[string][]byte {
	t.Helper()
	pages := map[string][]byte{}
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())
		var out bytes.Buffer
		io := &cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
		if code := cli.Main(context.Background(), newRoot(io), append(path[1:], "--help"), &out); code != cli.ExitOK {
			t.Errorf("%s --help: exit %d\n%s", c.CommandPath(), code, out.String())
		}
		pages[strings.Join(path, "_")+".txt"] = out.Bytes()
		for _, child := range c.Commands() {
			if child.Name() != "help" && child.Name() != "completion" {
				visit(child)
			}
		}
	}
	visit(newRoot(&cli.Streams{}))
	return pages
}

// Deps are the packages that the package in the current folder links, as
// go list -deps says.
func Deps(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	return strings.Fields(string(out))
}
