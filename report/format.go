package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Formats a report can be written in.
var Formats = []string{"text", "json", "junit"}

// CheckFormat refuses a format that is not one of Formats.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("--format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	return nil
}

// Report is what can be written in each format; JSON is the value itself.
type Report interface {
	WriteText(w io.Writer) error
	WriteJUnit(w io.Writer) error
}

// Write writes r in format: text, json or junit.
func Write(w io.Writer, format string, r Report) error {
	switch format {
	case "text":
		return r.WriteText(w)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "junit":
		return r.WriteJUnit(w)
	}
	return CheckFormat(format)
}
