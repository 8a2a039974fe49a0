package report

import (
	"fmt"
	"io"
	"strings"
)

// Annotation is one workflow command that GitHub Actions turns into an
// annotation of a file's line, as
//
//	::error file=hosts/mastodon.nix,line=42,col=7,title=PR101::unit ...
//
// Forgejo Actions (and any runner built on act) reads the same commands.
type Annotation struct {
	// Level is the command: "error", "warning" or "notice".
	Level string
	// File, Line and Column place the annotation; File is relative to the
	// repository's root, and empty for an annotation of the run itself.
	File   string
	Line   int
	Column int
	Title  string
	// Message may span lines.
	Message string
}

// String is the workflow command, on one line: every property and the
// message escaped as the runner unescapes them (the toolkit's escapeData
// and escapeProperty), so that no value can end the command early or
// start another.
func (a Annotation) String() string {
	var props []string
	add := func(key, value string) {
		if value != "" {
			props = append(props, key+"="+escapeProperty(value))
		}
	}
	add("file", a.File)
	if a.File != "" && a.Line > 0 {
		add("line", fmt.Sprint(a.Line))
		if a.Column > 0 {
			add("col", fmt.Sprint(a.Column))
		}
	}
	add("title", a.Title)
	cmd := "::" + a.Level
	if len(props) > 0 {
		cmd += " " + strings.Join(props, ",")
	}
	return cmd + "::" + escapeData(a.Message)
}

// escapeData escapes a command's message: % first, so that the escapes
// themselves survive, then the line ends.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// escapeProperty escapes a property's value: as a message, and also the
// : and , that end a value.
func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// WriteGitHub writes one workflow command per annotation, each on a line
// of its own, then the summary as a plain line of the log.
func WriteGitHub(w io.Writer, annotations []Annotation, summary string) error {
	var b strings.Builder
	for _, a := range annotations {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	if summary != "" {
		// A plain line: one that started with :: would be read as a
		// command.
		b.WriteString(strings.TrimLeft(summary, ":"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
