package report

import (
	"os"
	"path/filepath"
	"strings"
)

// Paths shows the files of a report, and the paths in an error line, as
// the person or CI that reads them opens them: a file inside the base
// folder relative to it, any other file absolute. Findings' locations and
// one-line errors go through the same Paths, so that both name a file the
// same way.
type Paths struct {
	// bases are the folder and, when it is reached through a symbolic
	// link, its real path: nix reads a flake at its real path, so its
	// files are inside the real folder.
	bases []string
}

// NewPaths shows files relative to base, an absolute folder; "" shows
// every file as it is.
func NewPaths(base string) Paths {
	if base == "" {
		return Paths{}
	}
	p := Paths{bases: []string{filepath.Clean(base)}}
	if real, err := filepath.EvalSymlinks(base); err == nil && real != p.bases[0] {
		p.bases = append(p.bases, real)
	}
	return p
}

// WorkingBase is the folder that reports show files relative to: the
// working directory, or in GitHub or Forgejo Actions the checkout
// ($GITHUB_WORKSPACE) that contains it, whose paths annotations take; ""
// when the working directory is unknown.
func WorkingBase() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	if ws := os.Getenv("GITHUB_WORKSPACE"); ws != "" && filepath.IsAbs(ws) {
		if inside(ws, wd) {
			return filepath.Clean(ws)
		}
	}
	return wd
}

// Base is the folder that files are relative to, or "".
func (p Paths) Base() string {
	if len(p.bases) == 0 {
		return ""
	}
	return p.bases[0]
}

// File shows file: relative to the base when it is inside it, else as
// it is. A position (FILE:LINE:COLUMN) is shown the same way.
func (p Paths) File(file string) string {
	if !filepath.IsAbs(file) {
		return file
	}
	for _, b := range p.bases {
		if rel, err := filepath.Rel(b, file); err == nil && inside(b, file) {
			return rel
		}
	}
	return file
}

// Text shows every absolute path of text below the base relative to it,
// as File does. A path starts a word, or follows a quote, a backquote or a
// parenthesis ("getting status of '/home/me/platform/hosts/x.nix'", "(at
// /home/me/platform/hosts/x.nix:3:5)"); a path inside a URL
// (git+file:///home/me/platform, path:/home/me/platform) is left as it is,
// since it is part of the URL. The base itself is left absolute: "." says
// less than its name.
func (p Paths) Text(text string) string {
	if len(p.bases) == 0 || !strings.Contains(text, "/") {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		if text[i] != '/' || (i > 0 && !strings.ContainsRune(" \t\n'\"`(=", rune(text[i-1]))) {
			b.WriteByte(text[i])
			i++
			continue
		}
		end := i + strings.IndexAny(text[i:]+" ", " \t\n'\"`),;")
		path := text[i:end]
		shown := p.File(path)
		if shown == "." {
			shown = path
		}
		b.WriteString(shown)
		i = end
	}
	return b.String()
}

// inside says whether file is base or below it.
func inside(base, file string) bool {
	rel, err := filepath.Rel(base, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
