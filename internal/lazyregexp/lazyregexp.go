// Package lazyregexp is a regular expression compiled on first use.
//
// A package-level regexp.MustCompile runs at every start of the binary,
// used or not: the checker's patterns for nix's error messages cost more
// of its start-up than all else of its own. The pattern is still checked
// by the tests that use it.
package lazyregexp

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression that New compiles on its first use.
type Regexp struct {
	compile func() *regexp.Regexp
}

// New returns expr, to be compiled on first use; like
// regexp.MustCompile, it panics then if expr does not compile.
func New(expr string) *Regexp {
	return &Regexp{compile: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// MatchString is regexp.Regexp's.
func (r *Regexp) MatchString(s string) bool { return r.compile().MatchString(s) }

// FindStringSubmatch is regexp.Regexp's.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.compile().FindStringSubmatch(s) }

// FindAllStringSubmatch is regexp.Regexp's.
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.compile().FindAllStringSubmatch(s, n)
}

// ReplaceAllString is regexp.Regexp's.
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.compile().ReplaceAllString(src, repl)
}
