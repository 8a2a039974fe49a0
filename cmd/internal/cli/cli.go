package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes that scripts can trust.
const (
	exitOK      = 0
	exitFailed  = 1 // the check or a scenario found a failure
	exitCantRun = 2 // usage, input or nix could not be read
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// streams are the I/O of a command, passed in so that every command runs in
// tests without a terminal.
type streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// failedError ends a command that ran to the end and found failures: exit 1,
// with the report already written.
type failedError struct{ summary string }

func (e *failedError) Error() string { return e.summary }

// Main runs podroles with args and returns its exit code.
func Main(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	io := &streams{In: in, Out: out, ErrOut: errOut}
	root := newRootCmd(io)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var failed *failedError
	if errors.As(err, &failed) {
		return exitFailed
	}
	name := "podroles"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(errOut, "%s: %s\n", name, oneLine(err.Error()))
	return exitCantRun
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newRootCmd(io *streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "podroles",
		Short: "Check the pod roles of NixOS nodes, and test the pods they become",
		Long: `podroles evaluates NixOS nodes with the real nix and applies every
evaluation rule of the pod-roles spec to them (podroles check), and prints the
facts it reads from them (podroles facts).`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(newCheckCmd(io), newFactsCmd(io), newRulesCmd(io), newScenariosCmd(io), newEnvCmd(io), newPodCmd(io), newPlanCmd(io))
	return root
}

// writeOutput writes through write to path, or to w when path is "". A file
// is written beside its final place and renamed, so that a failed write
// never leaves half a report where a whole one was.
func writeOutput(path string, w io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(w)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("output %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("output %s: %w", path, err)
	}
	return nil
}
