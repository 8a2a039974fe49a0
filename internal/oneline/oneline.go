// Package oneline puts a text on one line. An error in a report line
// must be on one line, and so must a log line or a command's last words.
package oneline

import "strings"

// Of folds text onto one line: every run of white space, line ends
// included, becomes one space.
func Of(text string) string { return strings.Join(strings.Fields(text), " ") }

// Err is err's text on one line.
func Err(err error) string { return Of(err.Error()) }

// First is the first line of err's text, folded: for servers that answer
// with pages (a container engine), whose first line says what failed.
func First(err error) string {
	first, _, _ := strings.Cut(err.Error(), "\n")
	return Of(first)
}

// Wrap is err with its text on one line, still wrapping err, so that
// errors.Is and errors.As see through it.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &folded{err}
}

type folded struct{ err error }

func (f *folded) Error() string { return Err(f.err) }
func (f *folded) Unwrap() error { return f.err }
