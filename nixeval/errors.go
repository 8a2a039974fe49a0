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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fediversity/podroles/internal/lazyregexp"
	"github.com/fediversity/podroles/internal/oneline"
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
	// podroles' own refusals say "podroles:", which the command's name
	// before the line says already.
	b.WriteString(strings.TrimPrefix(e.Reason(), "podroles: "))
	if e.Location != "" {
		fmt.Fprintf(&b, " (at %s)", e.Location)
	}
	return b.String()
}

// Reason is the error without the source and node it names, and without
// its Location.
func (e *EvalError) Reason() string {
	switch {
	case e.Kind == KindAssertions && len(e.Assertions) > 0:
		return "failed assertions: " + strings.Join(e.Assertions, "; ")
	case e.Option != "" && !strings.Contains(e.Message, "`"+e.Option+"'"):
		return fmt.Sprintf("option %s: %s", e.Option, e.Message)
	}
	return e.Message
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
		if at := tr.unitsReadAt(ownDir); at != "" {
			ee.Location = at
		}
	}
	if ee.Message == "" {
		ee.Message = fmt.Sprintf("nix failed (%v) and said nothing", runErr)
	}
	if failing != nil && failing.Kind == SourceFlake && failing.Checkout != "" && roots[failing] == "" &&
		storeSource.MatchString(ee.Message+"\n"+ee.Location) {
		// Nix failed in the flake's own flake.nix, before extract.nix
		// said where its source is in the store: ask nix. (2.31 names the
		// checkout's flake.nix for a syntax error there, 2.8 to 2.26 its
		// copy in the store.)
		roots[failing] = e.flakeStorePath(*failing, ownDir)
	}
	if failing != nil {
		if lockNeedsChanges(ee.Message) {
			ee.Message, ee.Location = lockMessage(*failing, e.lockChanges(*failing, ownDir)), ""
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
	if msg, ok := tr.missingGitInput(ee.Message); ok {
		ee.Message = msg
	}
	ee.Message = asNix224Says(ee.Message)
	if strings.HasPrefix(ee.Message, "syntax error") {
		ee.Kind = KindSyntax
		// From 2.25 nix's parser lists the tokens it expects where a
		// binding may start ("unexpected ';', expecting INHERIT"; 2.24:
		// "unexpected ';'"), naming inherit but not a name, which would do
		// as well: such a list is left out, and the line is 2.24's.
		if i := strings.Index(ee.Message, ", expecting "); i >= 0 {
			list, _, _ := strings.Cut(ee.Message[i:], "\n")
			if strings.Contains(list, "INHERIT") {
				ee.Message = ee.Message[:i] + ee.Message[i+len(list):]
			}
		}
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
		ee.Message = oneline.Of(ee.Message)
	}
	return ee
}

// rewordings are the messages that a later nix words anew, each with the
// line of 2.24 (and 2.8) that podroles prints instead, so that the line
// is the same on every release. Nix says the same in other words, and
// --show-trace still shows its own.
var rewordings = []struct {
	from *lazyregexp.Regexp
	to   string
}{
	// 2.26 and 2.31 name the builtin and the list's length.
	{lazyregexp.New(`^'builtins\.elemAt' called with index (-?\d+) on a list of size \d+$`), "list index $1 is out of bounds"},
	{lazyregexp.New(`^'builtins\.head' called on an empty list$`), "list index 0 is out of bounds"},
	{lazyregexp.New(`^'builtins\.tail' called on an empty list$`), "'tail' called on an empty list"},
}

// downloadFailed is nix's message for a failed download: "unable to
// download 'URL': TEXT (CODE)", TEXT being curl's for its error CODE. 2.26
// and 2.31 add curl's own detail after it, which may hold a duration.
var downloadFailed = lazyregexp.New(`(?s)^(unable to [a-z]+ '[^']*': )(.+?) \((\d+)\)(?:[ \n].*)?$`)

// usageHint is the hint nix prints after a usage error, naming its own
// binary, even when a builtin's argument was wrong.
var usageHint = lazyregexp.New(`\s*Try '[^']*' for more information\.$`)

// asNix224Says is message as nix 2.24 words it (rewordings); a failed
// download without curl's detail, in the words of curl before 8 (Debian
// 12's, which 2.8 and 2.24 use here: "Couldn't resolve host name", where
// curl 8 says "Could not resolve hostname"); and without nix's usage hint.
func asNix224Says(message string) string {
	for _, r := range rewordings {
		if r.from.MatchString(message) {
			return r.from.ReplaceAllString(message, r.to)
		}
	}
	if m := downloadFailed.FindStringSubmatch(message); m != nil {
		text := strings.NewReplacer("Could not ", "Couldn't ", "hostname", "host name").Replace(m[2])
		return fmt.Sprintf("%s%s (%s)", m[1], text, m[3])
	}
	return usageHint.ReplaceAllString(message, "")
}

// fetchingInput is the frame of an input nix was fetching, a flake's or
// builtins.fetchGit's; flakeInput the frame of the flake's input it was.
var (
	fetchingInput = lazyregexp.New(`^while fetching the input '(git\+file://[^']+)'$`)
	flakeInput    = lazyregexp.New(`^while updating the flake input '([^']+)'$`)
)

// missingGitInput says, where nix failed to fetch a git+file: input whose
// directory does not exist, that it does not: 2.8 says "program 'git'
// failed with exit code 128", 2.24 and 2.26 "resolving Git reference
// 'master': revspec 'master' not found", 2.31 "The path 'P' does not
// exist.".
func (tr trace) missingGitInput(message string) (string, bool) {
	if !strings.HasPrefix(message, "program 'git' failed") && !strings.HasPrefix(message, "resolving Git reference") &&
		!(strings.HasPrefix(message, "The path '") && strings.HasSuffix(message, "' does not exist.")) {
		return "", false
	}
	for i, f := range tr.frames {
		m := fetchingInput.FindStringSubmatch(f.text)
		if m == nil {
			continue
		}
		dir, missing := missingGitFolder(m[1])
		if !missing {
			return "", false
		}
		msg := fmt.Sprintf("git+file://%s: directory %s does not exist", dir, dir)
		for _, outer := range tr.frames[i+1:] {
			if in := flakeInput.FindStringSubmatch(outer.text); in != nil {
				return "input " + in[1] + ": " + msg, true
			}
		}
		return msg, true
	}
	return "", false
}

// missingGitDir says whether s is a git+file: flake whose directory does
// not exist, which nix reports as a failure of git.
func missingGitDir(s *Source) (string, bool) {
	if s == nil || s.Kind != SourceFlake {
		return "", false
	}
	return missingGitFolder(s.Ref)
}

// missingGitFolder gives the folder of a git+file: reference, when it does
// not exist.
func missingGitFolder(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, "git+file:")
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
	optionFrame      = lazyregexp.New("^while evaluating the option `([^']+)'$")
	definitionsFrame = lazyregexp.New("^while evaluating definitions from `([^']+)'$")
	// "- In `/path/a.nix': value", in a conflict or a type error.
	definitionInMessage = lazyregexp.New("(?m)^- In `([^']+)'")
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
var listOption = lazyregexp.New(`^fediversity\.podRoles\.(mainUnits|sharedUnits|roles(\..+\.units)?)$`)

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
	isUsers := usersFilter(candidates, ownDir)
	for _, c := range candidates {
		if isUsers(c) {
			return c
		}
	}
	if strings.HasPrefix(tr.location, ownDir+"/") && ownDir != "" {
		return ""
	}
	return tr.location
}

// unitsReadAt is where a list of an infinite recursion reads the units:
// the innermost position of the user's code between the outermost list's
// frame and the frame of systemd.services inside it. (The innermost
// position of all is where the module that makes units from the lists
// reads them, k8s-pod.nix, which is not where to fix it.) "" when the
// trace has no such frames.
func (tr trace) unitsReadAt(ownDir string) string {
	var positions []string
	for _, f := range tr.frames {
		positions = append(positions, f.location)
	}
	isUsers := usersFilter(positions, ownDir)
	inList, at := false, ""
	for _, f := range slices.Backward(tr.frames) {
		m := optionFrame.FindStringSubmatch(f.text)
		switch {
		case m != nil && listOption.MatchString(m[1]):
			inList = true
		case m != nil && m[1] == "systemd.services" && inList:
			return at
		case inList && isUsers(f.location):
			at = f.location
		}
	}
	return ""
}

// usersFilter says whether a position is the user's: a file in neither
// nixpkgs' lib, which it finds among candidates, nor podroles' own files in
// ownDir.
func usersFilter(candidates []string, ownDir string) func(string) bool {
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
	return func(c string) bool {
		return strings.HasPrefix(c, "/") && !(ownDir != "" && strings.HasPrefix(c, ownDir+"/")) &&
			!slices.ContainsFunc(libDirs, func(lib string) bool { return strings.HasPrefix(c, lib) })
	}
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
var missingInStore = lazyregexp.New(`^(?:getting status of '([^']+)': No such file or directory|path '([^']+)' does not exist)$`)

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

// storeSource is a path in the store's copy of a flake's source.
var storeSource = lazyregexp.New(`/nix/store/[0-9a-z]{32}-source(/|$)`)

// flakeStorePath asks nix where the source of the flake s is in the store
// (nix flake prefetch, which neither reads flake.nix nor locks), or "".
func (e *Evaluator) flakeStorePath(s Source, programDir string) string {
	stdout, _, err := e.askNix(programDir, "flake", "prefetch", "--json", s.Ref)
	if err != nil {
		return ""
	}
	var out struct {
		StorePath string `json:"storePath"`
	}
	if json.Unmarshal([]byte(stdout), &out) != nil || !storeSource.MatchString(out.StorePath+"/") {
		return ""
	}
	return out.StorePath
}

// askNix runs nix with args (and the options of nixArgs) for a minute at
// most, to explain an error: what it wrote on stdout and stderr.
func (e *Evaluator) askNix(programDir string, args ...string) (stdout, stderr string, err error) {
	path, err := e.nixPath()
	if err != nil {
		return "", "", err
	}
	if programDir == "" {
		return "", "", errors.New("no program folder to run nix from")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, nixArgs(programDir, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := startTiedToUs(cmd); err != nil {
		return "", "", err
	}
	err = cmd.Wait()
	return out.String(), errOut.String(), err
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

// lockNeedsChanges says whether message is nix 2.8's refusal of a flake
// whose flake.lock needs changes: builtins.getFlake may not write it
// ("requires lock file changes but they're not allowed due to
// '--no-update-lock-file'").
func lockNeedsChanges(message string) bool {
	return strings.Contains(message, "requires lock file changes but they're not allowed")
}

// notWritingLock starts nix's warning of a flake.lock it changed in
// memory, with the changes on the lines after it: nix 2.24's
// builtins.getFlake prints it, and nix 2.8's `nix flake metadata
// --no-write-lock-file` too.
const notWritingLock = "warning: not writing modified lock file of flake '"

// lockChange is a change of that warning: "• Updated input 'a':", "•
// Added input 'b':", "• Removed input 'c'".
var lockChange = lazyregexp.New(`^• (Updated|Added|Removed) input '([^']+)'`)

// changesAfter reads the changes that lines (after nix's warning) list,
// as flake.nix made them, until the list ends.
func changesAfter(lines []string) []string {
	verbs := map[string]string{"Updated": "changed", "Added": "added", "Removed": "dropped"}
	var changes []string
	for _, line := range lines {
		if m := lockChange.FindStringSubmatch(line); m != nil {
			changes = append(changes, verbs[m[1]]+" input "+m[2])
		} else if !strings.HasPrefix(line, " ") {
			break
		}
	}
	return changes
}

// lockChanges asks nix what the flake.lock of s lacks, since nix 2.8
// refuses the flake without a word of it: `nix flake metadata
// --no-write-lock-file` lists the changes, and writes nothing. None when
// nix cannot tell (offline, without an input it would fetch).
func (e *Evaluator) lockChanges(s Source, programDir string) []string {
	// The warning lists the changes, whatever nix's exit status.
	_, stderr, _ := e.askNix(programDir, "flake", "metadata", "--no-write-lock-file", s.Ref)
	lines := strings.Split(stderr, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, notWritingLock) {
			return changesAfter(lines[i+1:])
		}
	}
	return nil
}

// lockMessage says that the flake of s has no flake.lock, or one that
// needs changes (those flake.nix made, when nix said), and how to write
// it. nix build, nixos-rebuild and nix flake check would write it into the
// checkout (and git add -N it). podroles writes nothing there: it checks
// the flake as the checkout holds it, which is what a checkout of the
// repository builds elsewhere (docs/check.md).
func lockMessage(s Source, changes []string) string {
	if s.Checkout == "" {
		return fmt.Sprintf("flake %s needs changes to its flake.lock, which podroles does not make: lock it where it is written (nix flake lock)", s.Ref)
	}
	dir := flakeDir(s)
	sub, _ := filepath.Rel(s.Checkout, dir)
	lock := filepath.Join(dir, "flake.lock")
	git := strings.HasPrefix(s.Ref, "git+file:")
	state := fmt.Sprintf("%s needs changes (an input of flake.nix is new, changed or gone)", lock)
	if len(changes) > 0 {
		state = fmt.Sprintf("%s needs changes: flake.nix %s", lock, strings.Join(changes, ", "))
	}
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
	lines := strings.Split(string(stderr), "\n")
	for i, line := range lines {
		rest, ok := strings.CutPrefix(line, notWritingLock)
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
		return &EvalError{Kind: KindEval, Source: s.String(), Message: lockMessage(s, changesAfter(lines[i+1:])), Detail: strings.TrimSpace(string(stderr))}
	}
	return nil
}
