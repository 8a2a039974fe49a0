package nixeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrorKind says what went wrong in an evaluation.
type ErrorKind string

// The kinds of evaluation errors.
const (
	// KindSyntax is a Nix file that does not parse.
	KindSyntax ErrorKind = "syntax"
	// KindAssertions is NixOS's "Failed assertions:" refusal.
	KindAssertions ErrorKind = "assertions"
	// KindTimeout is an evaluation stopped by --timeout.
	KindTimeout ErrorKind = "timeout"
	// KindEval is any other error: a throw, a missing attribute, a type.
	KindEval ErrorKind = "eval"
)

// EvalError is a failed evaluation, attributed to the source and, where nix
// had got that far, the node it was evaluating.
type EvalError struct {
	Kind ErrorKind
	// Source is the source being evaluated, as the user named it.
	Source string
	// Node is the node being evaluated, when nix had got to one.
	Node string
	// Option is the option of the module system that nix was evaluating
	// (systemd.services), where the trace says.
	Option string
	// Message is nix's own message, whitespace folded to one line.
	Message string
	// Location is where the user's code is at fault: the file:line:column
	// of nix's error, or, when that is inside nixpkgs' lib or podroles' own
	// files, the innermost position of the trace outside them.
	Location string
	// Assertions are the failed assertions, for KindAssertions.
	Assertions []string
	// Detail is what nix printed on stderr: the trace, which podroles
	// check --show-trace prints.
	Detail string
}

func (e *EvalError) Error() string {
	var b strings.Builder
	b.WriteString("eval ")
	if e.Node != "" {
		fmt.Fprintf(&b, "node %s (%s)", e.Node, e.Source)
	} else {
		b.WriteString(e.Source)
	}
	b.WriteString(": ")
	switch {
	case e.Kind == KindAssertions && len(e.Assertions) > 0:
		fmt.Fprintf(&b, "failed assertions: %s", strings.Join(e.Assertions, "; "))
	case e.Option != "" && !strings.Contains(e.Message, "`"+e.Option+"'"):
		fmt.Fprintf(&b, "option %s: %s", e.Option, e.Message)
	default:
		b.WriteString(e.Message)
	}
	if e.Location != "" {
		fmt.Fprintf(&b, " (at %s)", e.Location)
	}
	return b.String()
}

// evalMark is the trace line extract.nix prints before each source and node.
const evalMark = "trace: podroles-eval "

// evalError reads what nix printed when it failed. ownDir is the folder of
// podroles' own Nix files, whose positions mean nothing to the user.
func (e *Evaluator) evalError(runErr error, stderr []byte, sources []Source, ownDir string) error {
	var notFound *NixNotFoundError
	if errors.As(runErr, &notFound) {
		return runErr
	}
	ee := &EvalError{Kind: KindEval}
	ee.Source = describeSources(sources)
	var failing *Source
	if len(sources) == 1 {
		failing = &sources[0]
	}

	var lines []string
	for _, line := range strings.Split(string(stderr), "\n") {
		if mark, ok := strings.CutPrefix(line, evalMark); ok {
			var at struct {
				Source int     `json:"source"`
				Node   *string `json:"node"`
			}
			if json.Unmarshal([]byte(mark), &at) == nil && at.Source >= 0 && at.Source < len(sources) {
				failing = &sources[at.Source]
				ee.Source, ee.Node = failing.String(), ""
				if at.Node != nil && failing.Attr == "" {
					ee.Node = *at.Node
				}
			}
			continue
		}
		lines = append(lines, line)
	}
	ee.Detail = strings.TrimSpace(strings.Join(lines, "\n"))

	var timeout *timeoutError
	if errors.As(runErr, &timeout) {
		ee.Kind, ee.Message = KindTimeout, timeout.Error()
		return ee
	}
	if errors.Is(runErr, context.Canceled) {
		ee.Message = "interrupted"
		return ee
	}
	tr := parseTrace(lines)
	ee.Message = tr.message
	if cond, ok := tr.failedAssertion(); ok && !strings.HasPrefix(ee.Message, "assertion ") {
		// Nix 2.24 explains a failed `assert a == b` ("an integer with
		// value '1' is not equal to …") without naming the assertion, whose
		// position only this frame has.
		ee.Message = fmt.Sprintf("assertion '%s' failed: %s", cond, ee.Message)
	}
	ee.Option = tr.option()
	ee.Location = tr.userLocation(ownDir)
	if ee.Message == "" {
		ee.Message = fmt.Sprintf("nix failed (%v) and said nothing", runErr)
	}
	if dir, missing := missingGitDir(failing); missing {
		// Nix 2.8 says "program 'git' failed with exit code 128", 2.24
		// "resolving Git reference 'master': revspec 'master' not found".
		ee.Message, ee.Location = fmt.Sprintf("%s: directory %s does not exist", failing.Ref, dir), ""
	}
	if strings.HasPrefix(ee.Message, "syntax error") {
		ee.Kind = KindSyntax
	}
	if i := strings.Index(ee.Message, "Failed assertions:"); i >= 0 {
		ee.Kind = KindAssertions
		for _, l := range strings.Split(ee.Message[i:], "\n")[1:] {
			if a, ok := strings.CutPrefix(strings.TrimSpace(l), "- "); ok {
				ee.Assertions = append(ee.Assertions, a)
			}
		}
	}
	if ee.Kind != KindAssertions {
		ee.Message = strings.Join(strings.Fields(ee.Message), " ")
	}
	return ee
}

// missingGitDir says whether s is a git+file: flake whose directory does
// not exist, which nix reports as a failure of git.
func missingGitDir(s *Source) (string, bool) {
	if s == nil || s.Kind != SourceFlake {
		return "", false
	}
	rest, ok := strings.CutPrefix(s.Ref, "git+file:")
	if !ok {
		return "", false
	}
	u, err := url.Parse("file:" + rest)
	if err != nil || u.Path == "" {
		return "", false
	}
	if _, err := os.Stat(u.Path); errors.Is(err, os.ErrNotExist) {
		return u.Path, true
	}
	return "", false
}

// trace is what nix printed about an error.
type trace struct {
	// message and location are the innermost error's text and position.
	message, location string
	// frames are the "… while …" lines, innermost first.
	frames []frame
}

type frame struct {
	text     string // "while evaluating the option `systemd.services'"
	location string // file:line:column, or ""
}

// parseTrace reads nix's error output in either layout. Nix 2.8 prints
// "error: MESSAGE", its position, then the frames from the innermost out
// (with --show-trace). Nix 2.24 prints a bare "error:", the frames from the
// outermost in (some of them without --show-trace), then the innermost
// "error: MESSAGE" and its position.
func parseTrace(lines []string) trace {
	var tr trace
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "error:") {
			start = i
		}
	}
	if start < 0 {
		for i := len(lines) - 1; i >= 0; i-- {
			if t := strings.TrimSpace(lines[i]); t != "" {
				tr.message = t
				break
			}
		}
		return tr
	}
	var msg []string
	first := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[start]), "error:"))
	if first != "" {
		msg = append(msg, first)
	}
	i := start + 1
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" && len(msg) == 0 {
			continue
		}
		if t == "" || strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "…") || strings.HasPrefix(t, "(use '--show-trace'") {
			break
		}
		msg = append(msg, t)
	}
	tr.message = strings.Join(msg, "\n")
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if at, ok := position(t); ok {
			tr.location = at
			break
		}
		if strings.HasPrefix(t, "…") || strings.HasPrefix(t, "error:") {
			break
		}
	}
	before := frames(lines[:start])
	slices.Reverse(before)
	tr.frames = append(frames(lines[start+1:]), before...)
	return tr
}

// position reads "at FILE:LINE:COLUMN:".
func position(line string) (string, bool) {
	at, ok := strings.CutPrefix(line, "at ")
	if !ok || !strings.HasSuffix(at, ":") {
		return "", false
	}
	return strings.TrimSuffix(at, ":"), true
}

// frames reads the "… while …" lines of lines, each with the position
// printed under it, in the order printed.
func frames(lines []string) []frame {
	var out []frame
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "…"):
			out = append(out, frame{text: strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(t, "…")), ":")})
		case strings.HasPrefix(t, "error:"):
			// A frame's position is printed before the next frame or error.
			out = append(out, frame{})
		default:
			if at, ok := position(t); ok && len(out) > 0 && out[len(out)-1].location == "" && out[len(out)-1].text != "" {
				out[len(out)-1].location = at
			}
		}
	}
	return slices.DeleteFunc(out, func(f frame) bool { return f.text == "" })
}

// The frames that nixpkgs' module system adds (lib.addErrorContext).
var (
	optionFrame      = regexp.MustCompile("^while evaluating the option `([^']+)'$")
	definitionsFrame = regexp.MustCompile("^while evaluating definitions from `([^']+)'$")
	// "- In `/path/a.nix': value", in a conflict or a type error.
	definitionInMessage = regexp.MustCompile("(?m)^- In `([^']+)'")
)

// failedAssertion is the condition of the assertion whose equality failed,
// from the frame nix 2.24 adds for it.
func (tr trace) failedAssertion() (string, bool) {
	const prefix = "while evaluating the condition of the assertion '"
	for _, f := range tr.frames {
		if cond, ok := strings.CutPrefix(f.text, prefix); ok && strings.HasSuffix(cond, "'") {
			return strings.TrimSuffix(cond, "'"), true
		}
	}
	return "", false
}

// option is the innermost option of the module system nix was evaluating.
func (tr trace) option() string {
	for _, f := range tr.frames {
		if m := optionFrame.FindStringSubmatch(f.text); m != nil {
			return m[1]
		}
	}
	return ""
}

// userLocation is where the user's own code is at fault: the innermost
// position in neither nixpkgs' lib (where the module system throws its
// errors) nor podroles' own files in ownDir; a file whose definitions were
// being evaluated, or that the message names, counts without a line.
// Without one, the error's own position, unless it is podroles'.
func (tr trace) userLocation(ownDir string) string {
	candidates := []string{tr.location}
	for _, f := range tr.frames {
		if m := definitionsFrame.FindStringSubmatch(f.text); m != nil {
			candidates = append(candidates, m[1])
		} else {
			candidates = append(candidates, f.location)
		}
	}
	// Last, the files the module system names in its message ("- In
	// `hosts/web.nix': …", of a conflict or a type error), whose trace
	// holds none.
	for _, m := range definitionInMessage.FindAllStringSubmatch(tr.message, -1) {
		candidates = append(candidates, m[1])
	}
	var libDirs []string
	for _, c := range candidates {
		file := fileOf(c)
		for _, core := range []string{"/lib/modules.nix", "/lib/options.nix", "/lib/types.nix"} {
			if strings.HasSuffix(file, core) {
				libDirs = append(libDirs, strings.TrimSuffix(file, core[len("/lib"):])+"/")
			}
		}
	}
	ours := func(c string) bool { return ownDir != "" && strings.HasPrefix(c, ownDir+"/") }
	for _, c := range candidates {
		if !strings.HasPrefix(c, "/") || ours(c) ||
			slices.ContainsFunc(libDirs, func(lib string) bool { return strings.HasPrefix(c, lib) }) {
			continue
		}
		return c
	}
	if ours(tr.location) {
		return ""
	}
	return tr.location
}

// fileOf drops ":LINE:COLUMN" from a position.
func fileOf(position string) string {
	for range 2 {
		i := strings.LastIndexByte(position, ':')
		if i < 0 {
			break
		}
		if _, err := strconv.Atoi(position[i+1:]); err != nil {
			break
		}
		position = position[:i]
	}
	return position
}
