// Package cli is what podroles' commands share, in the manner of the
// GitHub CLI's cmdutil. It holds the streams a command writes to (passed
// in, never globals), the exit codes scripts can trust, the root command
// and its error line, report files written whole, and the flags that
// name nodes. Each command is an options struct and a run function in
// its own package (nodecmd, harnesscmd); the binaries' mains only
// assemble them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/spf13/pflag"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fediversity/podroles/internal/levenshtein"
	"github.com/fediversity/podroles/internal/oneline"
	"github.com/fediversity/podroles/report"
)

// Exit codes that scripts can trust.
const (
	ExitOK      = 0
	ExitFailed  = 1 // the check or a scenario found a failure
	ExitCantRun = 2 // usage, input or nix could not be read
)

// Streams are the I/O of a command, passed in so that every command runs
// in tests without a terminal.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// FailedError ends a command that ran to the end and found failures: exit
// 1, with the report already written.
type FailedError struct{ Summary string }

func (e *FailedError) Error() string { return e.Summary }

// Root is a binary's root command, as NewRoot makes it.
type Root struct {
	// Use, Short and Long describe the binary; Long names every command.
	Use, Short, Long string
	Version          string
}

// NewRoot makes the root command, with its streams, and flag errors that
// point to --help.
func NewRoot(r Root, io *Streams, commands ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           r.Use,
		Short:         r.Short,
		Long:          r.Long,
		Version:       Version(r.Version),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if guess := closestFlag(c, err); guess != "" {
			return fmt.Errorf("%w; did you mean --%s? (see %s --help)", err, guess, c.CommandPath())
		}
		return fmt.Errorf("%w (see %s --help)", err, c.CommandPath())
	})
	root.AddCommand(commands...)
	return root
}

// Main runs root with args and returns the exit code: 0, 1 for a
// FailedError, an error's own where it has one (ExitCode, the pod
// supervisor's service's), 2 for any other error, which it writes on one
// line to errOut, named by the command that failed; errors joined by
// errors.Join (the nodes that nix failed on) get a line each. The files a
// line names are shown as the reports show them (report.Paths): relative
// to the working directory when inside it.
func Main(ctx context.Context, root *cobra.Command, args []string, errOut io.Writer) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var failed *FailedError
	if errors.As(err, &failed) {
		return ExitFailed
	}
	// The pod supervisor, a container's entrypoint, exits as its service
	// did.
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		fmt.Fprintln(errOut, oneline.Of(err.Error()))
		return coded.ExitCode()
	}
	name := root.Name()
	if cmd != nil {
		name = cmd.CommandPath()
	}
	paths := report.NewPaths(report.WorkingBase())
	for _, e := range Errors(err) {
		fmt.Fprintf(errOut, "%s: %s\n", name, oneline.Of(paths.Text(e.Error())))
	}
	return ExitCantRun
}

// Version is the binary's version: stamped, as make and the flake stamp
// it, or, where it says dev, what Go's build recorded of the source (go
// install's module version, go build's revision), or "dev".
func Version(stamped string) string {
	if stamped != "dev" {
		return stamped
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	switch {
	case revision == "":
		return "dev"
	case len(revision) > 12:
		revision = revision[:12]
	}
	if modified == "true" {
		revision += "-dirty"
	}
	return revision
}

// closestFlag is the flag of c nearest to the unknown flag that err
// names (--fiel: file), or "" where none is within two edits.
func closestFlag(c *cobra.Command, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return ""
	}
	best, bestDistance := "", 3
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if d := levenshtein.Distance(name, f.Name); d < bestDistance {
			best, bestDistance = f.Name, d
		}
	})
	return best
}

// Errors are the errors that err joins (errors.Join), each of them, or
// err alone.
func Errors(err error) []error {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, Errors(e)...)
	}
	return out
}

// Exec is a binary's main: it runs the root that newRoot makes on the
// process's arguments and streams, cancelled by an interrupt or SIGTERM,
// and exits with Main's code.
func Exec(newRoot func(*Streams) *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	io := &Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	code := Main(ctx, newRoot(io), os.Args[1:], io.ErrOut)
	stop()
	os.Exit(code)
}

// IsTerminal says w is a terminal, where a command draws progress.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// FlagError names the flag of a setting that a library refused: the
// library's error starts with the setting's name, which the flag spells
// the same ("format \"xml\": ..." becomes "--format \"xml\": ...").
func FlagError(err error) error { return fmt.Errorf("--%w", err) }
