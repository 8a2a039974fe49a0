package nixeval

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SourceKind says how a node is read.
type SourceKind string

// The kinds of sources.
const (
	// SourceFlake is a flake's nixosConfigurations, one entry or all.
	SourceFlake SourceKind = "flake"
	// SourceFile is a .nix file whose value is a config or a NixOS system.
	SourceFile SourceKind = "file"
	// SourceFacts is a facts document written earlier; it needs no nix.
	SourceFacts SourceKind = "facts"
)

// Source is one place nodes come from, as the user named it.
type Source struct {
	Kind SourceKind
	// Display is the source as the user wrote it, for messages and for
	// Node.Source; it never holds more than what the user typed.
	Display string
	// Ref is the flake reference nix gets: local paths made absolute.
	Ref string
	// Attr is the node of a flake, or "" for all of nixosConfigurations.
	Attr string
	// Path is the absolute path of a file or facts source.
	Path string
}

func (s Source) String() string {
	if s.Kind == SourceFlake && s.Attr != "" {
		return fmt.Sprintf("flake %s#%s", s.Display, s.Attr)
	}
	return fmt.Sprintf("%s %s", s.Kind, s.Display)
}

// FlakeSource parses REF#NODE or REF. A fragment may also be written
// nixosConfigurations.NODE, as in `nix build .#nixosConfigurations.NODE`.
// A local reference (a path, or path:PATH) is made absolute, because nix
// resolves it against its own working directory and builtins.getFlake
// refuses relative paths.
func FlakeSource(arg string) (Source, error) {
	ref, attr, _ := strings.Cut(arg, "#")
	attr = strings.TrimPrefix(attr, "nixosConfigurations.")
	if ref == "" {
		return Source{}, fmt.Errorf("flake %q: empty flake reference; write REF#NODE, e.g. .#mastodon", arg)
	}
	if strings.ContainsAny(attr, `."$\`) {
		return Source{}, fmt.Errorf("flake %q: %q is no node name; write REF#NODE for nixosConfigurations.NODE", arg, attr)
	}
	s := Source{Kind: SourceFlake, Display: ref, Ref: ref, Attr: attr}
	local, isPath := strings.CutPrefix(ref, "path:")
	if isPath || !strings.Contains(ref, ":") {
		abs, err := filepath.Abs(local)
		if err != nil {
			return Source{}, fmt.Errorf("flake %s: %w", ref, err)
		}
		if _, err := os.Stat(filepath.Join(abs, "flake.nix")); err != nil {
			return Source{}, fmt.Errorf("flake %s: no flake.nix in %s", ref, local)
		}
		s.Ref = abs
		if isPath {
			s.Ref = "path:" + abs
		}
	}
	return s, nil
}

// FileSource names a .nix file whose value is a node's config attribute set
// or a NixOS system (something with a config attribute).
func FileSource(path string) (Source, error) {
	return localSource(SourceFile, path)
}

// FactsSource names a facts document written by `podroles facts` or by the
// flake's lib.
func FactsSource(path string) (Source, error) {
	return localSource(SourceFacts, path)
}

func localSource(kind SourceKind, path string) (Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Source{}, fmt.Errorf("%s %s: %w", kind, path, err)
	}
	info, err := os.Stat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Source{}, fmt.Errorf("%s %s: no such file", kind, path)
	case err != nil:
		return Source{}, fmt.Errorf("%s %s: %w", kind, path, err)
	case info.IsDir():
		return Source{}, fmt.Errorf("%s %s: is a directory, not a file", kind, path)
	}
	return Source{Kind: kind, Display: path, Path: abs}, nil
}

// GuessSource reads a bare argument: a .json file is facts, a .nix file is a
// node file, anything else a flake reference.
func GuessSource(arg string) (Source, error) {
	switch {
	case strings.HasSuffix(arg, ".json"):
		return FactsSource(arg)
	case strings.HasSuffix(arg, ".nix") && !strings.Contains(arg, "#"):
		return FileSource(arg)
	default:
		return FlakeSource(arg)
	}
}

// fileNodeName is the name of a file's node when it sets no hostName.
func fileNodeName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".nix")
}
