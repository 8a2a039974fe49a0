package nixeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// Message is nix's own message, whitespace folded to one line.
	Message string
	// Location is the file:line:column nix gave, if any.
	Location string
	// Assertions are the failed assertions, for KindAssertions.
	Assertions []string
	// Detail is what nix printed on stderr, for --show-trace.
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

// evalError reads what nix printed when it failed.
func (e *Evaluator) evalError(runErr error, stderr []byte, sources []Source) error {
	var notFound *NixNotFoundError
	if errors.As(runErr, &notFound) {
		return runErr
	}
	ee := &EvalError{Kind: KindEval}
	ee.Source = describeSources(sources)

	var lines []string
	for _, line := range strings.Split(string(stderr), "\n") {
		if mark, ok := strings.CutPrefix(line, evalMark); ok {
			var at struct {
				Source int     `json:"source"`
				Node   *string `json:"node"`
			}
			if json.Unmarshal([]byte(mark), &at) == nil && at.Source >= 0 && at.Source < len(sources) {
				ee.Source, ee.Node = sources[at.Source].String(), ""
				if at.Node != nil && sources[at.Source].Attr == "" {
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
	ee.Message, ee.Location = nixMessage(lines)
	if ee.Message == "" {
		ee.Message = fmt.Sprintf("nix failed (%v) and said nothing", runErr)
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

// nixMessage finds the innermost error in what nix printed: nix 2.8 puts it
// on the first "error:" line, newer releases under a stack of "…" lines with
// the innermost "error:" last. It returns the message and its location.
func nixMessage(lines []string) (message, location string) {
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "error:") {
			start = i
		}
	}
	if start < 0 {
		for i := len(lines) - 1; i >= 0; i-- {
			if t := strings.TrimSpace(lines[i]); t != "" {
				return t, ""
			}
		}
		return "", ""
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
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if at, ok := strings.CutPrefix(t, "at "); ok && strings.HasSuffix(at, ":") {
			location = strings.TrimSuffix(at, ":")
			break
		}
		if strings.HasPrefix(t, "…") || strings.HasPrefix(t, "error:") {
			break
		}
	}
	return strings.Join(msg, "\n"), location
}
