package nixeval

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fediversity/podroles/facts"
)

// NodeError is a node that nix could not evaluate, or a flake whose nodes
// nix could not list. The evaluation goes on without it: Load returns the
// other nodes beside it, so that a report shows them and this one error.
type NodeError struct {
	// Node is the node's name: a flake's attribute, or a file's name
	// (its hostName when nix got that far, else the file's base name);
	// "" for a flake whose nodes nix could not list.
	Node string
	// Source is the node's source as its facts name it
	// (file:hosts/web.nix, flake:REF#web), or the flake's (flake:REF).
	Source string
	// File is the file that holds the node (a file source's, a local
	// flake's flake.nix), for a report to place an error that nix gave
	// no position in the user's files; "" when there is none.
	File string
	// Err is why: an *EvalError, a reply that nix garbled, or a value of
	// the wrong type (a *facts.TypeError).
	Err error
	// Option is the path of the option whose value has the wrong type,
	// and Defined its definition, once LocateFailures found it.
	Option  []string
	Defined *facts.Location
	// ref is the node as its facts name it, for LocateFailures.
	ref *facts.NodeRef
}

// Error names the node, where Err does not (nix's errors name it).
func (e *NodeError) Error() string {
	var ee *EvalError
	if e.Node != "" && !errors.As(e.Err, &ee) {
		return "node " + e.Node + " (" + e.Source + "): " + e.Err.Error()
	}
	return e.Err.Error()
}

func (e *NodeError) Unwrap() error { return e.Err }

// Reason is the error without the source and node it names, and without
// its position: what a report's entry for the node says. (A refusal of
// podroles' own Nix files needs no "podroles:" there.)
func (e *NodeError) Reason() string {
	var ee *EvalError
	if errors.As(e.Err, &ee) {
		return strings.TrimPrefix(ee.Reason(), "podroles: ")
	}
	return e.Err.Error()
}

// Location is where a report places the error: nix's position of it in
// the user's files, else the definition of the value of the wrong type,
// else the node's File; nil when none is known.
func (e *NodeError) Location() *facts.Location {
	var ee *EvalError
	switch {
	case errors.As(e.Err, &ee) && ee.Location != "":
		return parsePosition(ee.Location)
	case e.Defined != nil:
		return e.Defined
	}
	if e.File == "" {
		return nil
	}
	return &facts.Location{File: e.File}
}

// parsePosition reads FILE:LINE:COLUMN, or FILE:LINE, or FILE.
func parsePosition(position string) *facts.Location {
	loc := &facts.Location{File: fileOf(position)}
	rest := strings.Split(strings.TrimPrefix(position[len(loc.File):], ":"), ":")
	if len(rest) >= 1 {
		loc.Line, _ = strconv.Atoi(rest[0])
	}
	if len(rest) == 2 {
		loc.Column, _ = strconv.Atoi(rest[1])
	}
	return loc
}

// NodeErrors are the nodes that err says nix failed on, and whether err
// says nothing else: the evaluation ran to its end, and Load returned
// every other node. False for an error that stopped the whole evaluation
// (nix missing or refused, a timeout, a source that cannot be read).
func NodeErrors(err error) ([]*NodeError, bool) {
	if err == nil {
		return nil, false
	}
	var out []*NodeError
	var walk func(error) bool
	walk = func(err error) bool {
		if ne, ok := err.(*NodeError); ok {
			out = append(out, ne)
			return true
		}
		joined, ok := err.(interface{ Unwrap() []error })
		if !ok {
			return false
		}
		for _, e := range joined.Unwrap() {
			if !walk(e) {
				return false
			}
		}
		return true
	}
	if !walk(err) {
		return nil, false
	}
	return out, true
}

// nodeError attributes a task's failure to its node: the task's source
// and, for a flake's node, its name (a file's node is named by the hostName
// nix read, when it got that far).
func nodeError(s Source, attr *string, err error) *NodeError {
	ne := &NodeError{Err: err}
	switch {
	case s.Kind == SourceFile:
		ne.Node, ne.Source, ne.File = fileNodeName(s.Path), "file:"+s.Display, s.Path
	case attr != nil:
		ne.Node, ne.Source = *attr, "flake:"+s.Ref+"#"+*attr
	default:
		ne.Source = "flake:" + s.Ref
	}
	if s.Kind == SourceFlake && s.Checkout != "" {
		ne.File = filepath.Join(flakeDir(s), "flake.nix")
	}
	return ne
}

// named gives a file's node the name nix read for it.
func (e *NodeError) named() {
	var ee *EvalError
	if strings.HasPrefix(e.Source, "file:") && errors.As(e.Err, &ee) && ee.Node != "" {
		e.Node = ee.Node
	}
}
