package nixeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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

	// recursingLists are the lists of pod roles (their options) that the
	// trace of an infinite recursion evaluated together with
	// systemd.services: those that read the units (FR-007).
	recursingLists []string
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
	// roots are where the flakes' sources are in the store, by source.
	roots := map[*Source]string{}
	for _, line := range strings.Split(string(stderr), "\n") {
		if mark, ok := strings.CutPrefix(line, evalMark); ok {
			var at struct {
				Source int     `json:"source"`
				Node   *string `json:"node"`
				Root   string  `json:"root"`
			}
			if json.Unmarshal([]byte(mark), &at) == nil && at.Source >= 0 && at.Source < len(sources) {
				failing = &sources[at.Source]
				ee.Source, ee.Node = failing.String(), ""
				if at.Node != nil && failing.Attr == "" {
					ee.Node = *at.Node
				}
				if at.Root != "" {
					roots[failing] = at.Root
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
	if strings.Contains(ee.Message, "infinite recursion") {
		ee.recursingLists = tr.listsWithUnits()
	}
	if ee.Message == "" {
		ee.Message = fmt.Sprintf("nix failed (%v) and said nothing", runErr)
	}
	if failing != nil {
		if msg, ok := lockNeedsChanges(ee.Message, *failing); ok {
			ee.Message, ee.Location = msg, ""
		}
		if root := roots[failing]; root != "" && failing.Checkout != "" {
			if msg, ok := missingFlakeFile(ee.Message, root, *failing); ok {
				ee.Message, ee.Location = msg, ""
			}
			ee.Message = checkoutPaths(ee.Message, root, failing.Checkout)
			ee.Location = checkoutPaths(ee.Location, root, failing.Checkout)
		}
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

// listOption is an option that holds a list of units (or the set of roles,
// whose names the lists follow).
var listOption = regexp.MustCompile(`^fediversity\.podRoles\.(mainUnits|sharedUnits|roles(\..+\.units)?)$`)

// listsWithUnits are the options of the lists that nix was evaluating
// together with systemd.services, outermost first: in an infinite
// recursion, the lists that read the units. (With --k8s-pod-module the
// FR-007 probe says it; a node that imports k8s-pod.nix itself recurses in
// the probe too, and only the trace tells.) The set of roles counts only
// when no role's units are in the trace: a role's units are evaluated
// through it.
func (tr trace) listsWithUnits() []string {
	var lists []string
	units := false
	for _, f := range slices.Backward(tr.frames) {
		m := optionFrame.FindStringSubmatch(f.text)
		switch {
		case m == nil:
		case m[1] == "systemd.services":
			units = true
		case listOption.MatchString(m[1]) && !slices.Contains(lists, m[1]):
			lists = append(lists, m[1])
		}
	}
	if !units {
		return nil
	}
	if slices.ContainsFunc(lists, func(l string) bool { return strings.HasSuffix(l, ".units") }) {
		lists = slices.DeleteFunc(lists, func(l string) bool { return l == "fediversity.podRoles.roles" })
	}
	return lists
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
		// lib by itself, as a flake input of its own (path:…/lib, or
		// nixpkgs.lib's source at the top of the input).
		if dir := filepath.Dir(file); filepath.Base(file) == "modules.nix" && filepath.Base(dir) != "lib" &&
			exists(filepath.Join(dir, "options.nix")) && exists(filepath.Join(dir, "types.nix")) {
			libDirs = append(libDirs, dir+"/")
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

// checkoutPaths writes the files of a flake's source in the store (root)
// in text as the files of the checkout they were copied from, as the
// locations of findings are: the user edits those.
func checkoutPaths(text, root, checkout string) string {
	return strings.ReplaceAll(text, root+"/", checkout+"/")
}

// missingInStore reads nix's message for a file it could not find: 2.8
// says "getting status of 'P': No such file or directory", 2.24 "path 'P'
// does not exist".
var missingInStore = regexp.MustCompile(`^(?:getting status of '([^']+)': No such file or directory|path '([^']+)' does not exist)$`)

// missingFlakeFile explains nix's message that a file of the flake's
// source in the store (root) does not exist. In a git work tree nix copies
// only the files git tracks, so the file the user sees in the checkout is
// missing from the copy: say so, and the git add that fixes it. A file
// that the checkout lacks too does not exist.
func missingFlakeFile(message, root string, s Source) (string, bool) {
	m := missingInStore.FindStringSubmatch(message)
	if m == nil {
		return "", false
	}
	rel, ok := strings.CutPrefix(m[1]+m[2], root+"/")
	if !ok {
		return "", false
	}
	local := filepath.Join(s.Checkout, rel)
	if _, err := os.Lstat(local); err != nil {
		return fmt.Sprintf("%s does not exist", local), true
	}
	if !strings.HasPrefix(s.Ref, "git+file:") {
		return "", false
	}
	add := "git add"
	why := "is not tracked by git"
	if gitIgnores(s.Checkout, rel) {
		add, why = "git add -f", "is ignored by git (.gitignore)"
	}
	return fmt.Sprintf("%s %s, and nix reads a flake in a git work tree from the files git tracks only: %s", local, why, gitCommand(s.Checkout, add, rel)), true
}

// gitIgnores says whether git ignores file of the work tree at root.
func gitIgnores(root, file string) bool {
	git, err := exec.LookPath("git")
	if err != nil {
		return false
	}
	return exec.Command(git, "-C", root, "check-ignore", "-q", "--", file).Run() == nil
}

// gitCommand is the git command (e.g. "git add") on file of the work tree
// at root, written to run where podroles ran: with file relative to the
// working directory inside the work tree, else with -C root.
func gitCommand(root, command, file string) string {
	if rel, ok := fromHere(root, filepath.Join(root, file)); ok {
		return command + " " + rel
	}
	return fmt.Sprintf("git -C %s %s %s", root, strings.TrimPrefix(command, "git "), file)
}

// fromHere is path relative to the working directory, when that is inside
// root (a checkout), where a command the user runs takes it so.
func fromHere(root, path string) (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	if rel, err := filepath.Rel(root, wd); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	rel, err := filepath.Rel(wd, path)
	return rel, err == nil
}

// lockNeedsChanges explains nix 2.8's refusal of a flake whose flake.lock
// needs changes: builtins.getFlake may not write it ("requires lock file
// changes but they're not allowed due to '--no-update-lock-file'").
func lockNeedsChanges(message string, s Source) (string, bool) {
	if !strings.Contains(message, "requires lock file changes but they're not allowed") {
		return "", false
	}
	return lockMessage(s), true
}

// lockMessage says that the flake of s has no flake.lock, or one that
// needs changes, and how to write it. nix build, nixos-rebuild and nix flake
// check would write it into the checkout (and git add -N it); podroles
// writes nothing there, and checks the flake as the checkout holds it, so
// that what it checks is what a checkout of the repository builds
// elsewhere (docs/check.md).
func lockMessage(s Source) string {
	if s.Checkout == "" {
		return fmt.Sprintf("flake %s needs changes to its flake.lock, which podroles does not make: lock it where it is written (nix flake lock)", s.Ref)
	}
	dir := s.Checkout
	sub := ""
	if _, query, ok := strings.Cut(s.Ref, "?"); ok {
		if q, err := url.ParseQuery(query); err == nil {
			sub = q.Get("dir")
		}
	}
	dir = filepath.Join(dir, sub)
	lock := filepath.Join(dir, "flake.lock")
	git := strings.HasPrefix(s.Ref, "git+file:")
	state := fmt.Sprintf("%s needs changes (an input of flake.nix is new, changed or gone)", lock)
	_, statErr := os.Stat(lock)
	switch {
	case statErr != nil:
		state = fmt.Sprintf("%s does not exist", lock)
	case git && !gitTracks(s.Checkout, filepath.Join(sub, "flake.lock")):
		state = fmt.Sprintf("git does not track %s, and nix reads a flake in a git work tree from the files git tracks only", lock)
	}
	fix := "run " + nixFlakeLock(s.Checkout, dir)
	if git {
		fix += " and " + gitCommand(s.Checkout, "git add", filepath.Join(sub, "flake.lock"))
	}
	return fmt.Sprintf("%s; nix build and nixos-rebuild would write it, podroles checks the flake as the checkout holds it: %s", state, fix)
}

// gitTracks says whether git tracks file of the work tree at root (true
// when git cannot say: nix, which runs git itself, will).
func gitTracks(root, file string) bool {
	git, err := exec.LookPath("git")
	if err != nil {
		return true
	}
	out, err := exec.Command(git, "-C", root, "ls-files", "--", file).Output()
	return err != nil || len(strings.TrimSpace(string(out))) > 0
}

// nixFlakeLock is the command that locks the flake in dir of the checkout
// root, written to run where podroles ran: a path that nix reads as a path
// (./dir, never dir, which nix reads as the registry's entry).
func nixFlakeLock(root, dir string) string {
	rel, ok := fromHere(root, dir)
	switch {
	case !ok:
		return "nix flake lock " + dir
	case rel == ".":
		return "nix flake lock"
	case strings.HasPrefix(rel, "."):
		return "nix flake lock " + rel
	}
	return "nix flake lock ./" + rel
}

// lockNotWritten refuses a flake whose flake.lock nix 2.24 changed in
// memory: its builtins.getFlake locks what the lock file lacks without
// writing it, and says only "warning: not writing modified lock file of
// flake 'REF':" and the changes, where nix 2.8 refuses (lockNeedsChanges).
// podroles refuses on both, with the same line.
func lockNotWritten(stderr []byte, sources []Source) error {
	const warning = "warning: not writing modified lock file of flake '"
	for _, line := range strings.Split(string(stderr), "\n") {
		rest, ok := strings.CutPrefix(line, warning)
		if !ok {
			continue
		}
		ref, _, _ := strings.Cut(rest, "'")
		// The flake is the source of that reference, or the only flake.
		s := Source{Kind: SourceFlake, Display: ref, Ref: ref}
		var flakes []Source
		for _, c := range sources {
			if c.Kind == SourceFlake {
				flakes = append(flakes, c)
			}
		}
		if i := slices.IndexFunc(flakes, func(c Source) bool { return c.Ref == ref }); i >= 0 {
			s = flakes[i]
		} else if len(flakes) == 1 {
			s = flakes[0]
		}
		return &EvalError{Kind: KindEval, Source: s.String(), Message: lockMessage(s), Detail: strings.TrimSpace(string(stderr))}
	}
	return nil
}
