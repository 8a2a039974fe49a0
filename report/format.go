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

// LocatedFormats are the formats of a report whose entries have places in
// files, as the findings of podroles check do: Formats, GitHub's workflow
// commands and SARIF.
var LocatedFormats = append(slices.Clip(Formats), "github", "sarif")

// CheckFormat refuses a format that is not one of formats (by default,
// Formats).
func CheckFormat(format string, formats ...string) error {
	if len(formats) == 0 {
		formats = Formats
	}
	if !slices.Contains(formats, format) {
		return fmt.Errorf("format %q: want one of %s", format, strings.Join(formats, ", "))
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
