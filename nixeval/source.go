package nixeval

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/fediversity/podroles/internal/lazyregexp"
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
	// Ref is the flake reference nix gets: a local path resolved as nix's
	// command line resolves it (git+file:///ROOT?dir=SUB in a git work
	// tree, path:/DIR elsewhere).
	Ref string
	// Checkout is the local folder that nix copies as the flake's source
	// (the root of the git work tree, or the flake's folder), or "" for a
	// flake that is not local. A path in the store copy of the flake's
	// source is this folder's file of the same relative path.
	Checkout string
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
//
// A local reference is resolved as nix's command line resolves it (nix
// eval, nix build, nix flake check, nixos-rebuild --flake).
// builtins.getFlake, which podroles evaluates through, reads a bare path
// differently. In a git work tree, `.`, `./dir` or `/abs/dir` is the flake
// `git+file:///ROOT?dir=SUB`, which sees only the files git tracks (staged
// or committed, dirty or not). Outside one it is `path:/abs/dir`, which
// sees every file. A bare name such as `hosts` is the flake registry's entry, as
// for nix. `path:DIR` keeps its meaning, made absolute.
func FlakeSource(arg string) (Source, error) {
	return flakeSource(arg, false)
}

// flakeSource is FlakeSource; with bare, a reference without a scheme is
// a local path, never the flake registry's entry.
func flakeSource(arg string, bare bool) (Source, error) {
	ref, attr, _ := strings.Cut(arg, "#")
	attr = strings.TrimPrefix(attr, "nixosConfigurations.")
	if ref == "" {
		return Source{}, fmt.Errorf("flake %q: empty flake reference; write REF#NODE, e.g. .#mastodon", arg)
	}
	if strings.ContainsAny(attr, `."$\`) {
		return Source{}, fmt.Errorf("flake %q: %q is no node name; write REF#NODE for nixosConfigurations.NODE", arg, attr)
	}
	s := Source{Kind: SourceFlake, Display: ref, Ref: ref, Attr: attr}
	var err error
	switch {
	case flakeID.MatchString(ref) && !bare:
		if _, statErr := os.Stat(filepath.Join(ref, "flake.nix")); statErr == nil {
			return Source{}, fmt.Errorf("flake %s: nix reads %s as the flake registry's entry flake:%s, not as the folder %s; write ./%s", ref, ref, ref, ref, ref)
		}
		if info, statErr := os.Stat(ref); statErr == nil && info.IsDir() {
			return Source{}, fmt.Errorf("flake %s: the folder %s has no flake.nix, and nix would read %s as the flake registry's entry; name a node file in it with --file %s, or the registry's entry as flake:%s", ref, ref, ref, filepath.Join(ref, "NAME.nix"), ref)
		}
	case strings.HasPrefix(ref, "path:"):
		s.Ref, s.Checkout, err = pathURL(ref)
	case urlScheme.MatchString(ref):
		if u, parseErr := url.Parse(ref); parseErr == nil && u.Scheme == "git+file" {
			s.Checkout = u.Path
		}
	default:
		s.Ref, s.Checkout, err = resolveLocalFlake(ref)
	}
	if err != nil {
		return Source{}, fmt.Errorf("flake %s: %w", ref, err)
	}
	return s, nil
}

var (
	// flakeID is nix's short form of a registry entry: an identifier,
	// optionally with /REF or /REV (nixpkgs, nixpkgs/nixos-26.05).
	flakeID = lazyregexp.New(`^[a-zA-Z][a-zA-Z0-9_-]*(/[a-zA-Z0-9@][a-zA-Z0-9_.@+-]*(/[a-zA-Z0-9@][a-zA-Z0-9_.@+-]*)?)?$`)
	// urlScheme starts a URL (github:, git+https:, tarball+file:, ...).
	urlScheme = lazyregexp.New(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// pathURL makes the folder of a path: reference absolute, since
// builtins.getFlake refuses a relative one.
func pathURL(ref string) (resolved, checkout string, err error) {
	local, query, _ := strings.Cut(strings.TrimPrefix(ref, "path:"), "?")
	abs, err := filepath.Abs(local)
	if err != nil {
		return "", "", err
	}
	dir := abs
	if q, qErr := url.ParseQuery(query); qErr == nil && q.Get("dir") != "" {
		dir = filepath.Join(abs, q.Get("dir"))
	}
	if _, err := os.Stat(filepath.Join(dir, "flake.nix")); err != nil {
		return "", "", fmt.Errorf("no flake.nix in %s", dir)
	}
	resolved = "path:" + abs
	if query != "" {
		resolved += "?" + query
	}
	return resolved, abs, nil
}

// resolveLocalFlake resolves a path to a flake as nix's command line does:
// the folder, or the first one above it that holds a flake.nix (the search
// stops at the root of a git work tree); then the first folder at or above
// that holds .git. In a git work tree the flake is git+file://ROOT with
// ?dir= the flake's folder below the root; elsewhere path:FOLDER.
func resolveLocalFlake(ref string) (resolved, checkout string, err error) {
	local, rawQuery, _ := strings.Cut(ref, "?")
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return "", "", fmt.Errorf("query %q: %w", rawQuery, err)
	}
	dir, err := filepath.Abs(local)
	if err != nil {
		return "", "", err
	}
	// Newer nix resolves symlinks here (nix 2.8 refuses a link).
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	info, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("no such folder %s", local)
	case !info.IsDir() && filepath.Base(dir) == "flake.nix":
		dir = filepath.Dir(dir)
	case !info.IsDir():
		return "", "", fmt.Errorf("%s is not a folder that holds a flake.nix", local)
	}
	start := dir
	for !exists(filepath.Join(dir, "flake.nix")) {
		if exists(filepath.Join(dir, ".git")) || dir == "/" {
			if sub := query.Get("dir"); sub != "" && exists(filepath.Join(start, sub, "flake.nix")) {
				// nix, too, looks for the flake.nix of the folder before
				// it reads ?dir=.
				return "", "", fmt.Errorf("no flake.nix in %s or above it, where nix looks before it reads ?dir=; for the flake in %s, write %s", local, sub, "./"+filepath.ToSlash(filepath.Join(local, sub)))
			}
			return "", "", fmt.Errorf("no flake.nix in %s or above it", local)
		}
		dir = filepath.Dir(dir)
	}

	root, sub := dir, ""
	for !exists(filepath.Join(root, ".git")) {
		if root == "/" {
			if rawQuery != "" {
				return "", "", fmt.Errorf("nix ignores ?%s on a flake outside a git work tree; name the flake's folder itself", rawQuery)
			}
			return "path:" + dir, dir, nil
		}
		sub = filepath.Join(filepath.Base(root), sub)
		root = filepath.Dir(root)
	}
	if sub != "" {
		if query.Has("dir") {
			return "", "", fmt.Errorf("?dir=%s, but the flake's folder is %s of the git work tree %s; give one of them", query.Get("dir"), sub, root)
		}
		query.Set("dir", sub)
	}
	if exists(filepath.Join(root, ".git", "shallow")) {
		query.Set("shallow", "1")
	}
	if err := tracked(root, filepath.Join(query.Get("dir"), "flake.nix")); err != nil {
		return "", "", err
	}
	u := url.URL{Scheme: "git+file", Path: root, RawQuery: query.Encode()}
	return u.String(), root, nil
}

// tracked fails when git does not track file of the work tree at root:
// nix copies only what git tracks, so its error would name a path in the
// store that does not exist.
func tracked(root, file string) error {
	if gitTracks(root, file) {
		return nil
	}
	return fmt.Errorf("git does not track %s, and nix reads a flake in a git work tree from the files git tracks only: %s", filepath.Join(root, file), gitCommand(root, "git add", file))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
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
	case kind == SourceFile && !info.Mode().IsRegular():
		// nix's workers read the node by its path, and do not share
		// podroles' standard input: /dev/stdin would be their /dev/null.
		return Source{}, fmt.Errorf("%s %s: is no regular file (a pipe, a device): nix reads a node by its path; write the node to a file", kind, path)
	}
	return Source{Kind: kind, Display: path, Path: abs}, nil
}

// GuessSource reads a bare argument: a .json file is facts, a .nix file is a
// node file, anything else a flake reference. A bare argument that names
// no file or folder here and has no scheme is refused, where nix would look
// it up in its flake registries: a typing error (tpyo.nx) must not be
// taken for the name of a flake. A remote flake, or one of the
// registry, is named with its scheme (github:, git+https:, flake:) or with
// --flake.
//
// A folder is read as its own flake, never as the registry's entry of its
// name (hosts is ./hosts), and a folder without a flake.nix is refused by
// name: a bare argument is no search for a flake above it.
func GuessSource(arg string) (Source, error) {
	// A file that is there is that file, even with a # in its name.
	if info, err := os.Stat(arg); err == nil && info.Mode().IsRegular() && strings.Contains(arg, "#") {
		switch {
		case strings.HasSuffix(arg, ".json"):
			return FactsSource(arg)
		case strings.HasSuffix(arg, ".nix"):
			return FileSource(arg)
		}
	}
	switch {
	case strings.HasSuffix(arg, ".json"):
		return FactsSource(arg)
	case strings.HasSuffix(arg, ".nix") && !strings.Contains(arg, "#"):
		return FileSource(arg)
	case urlScheme.MatchString(arg):
		return FlakeSource(arg)
	}
	local, _, _ := strings.Cut(arg, "#")
	local, rawQuery, _ := strings.Cut(local, "?")
	if !exists(local) {
		return Source{}, fmt.Errorf("%s: no such file or folder; a remote flake is named with its scheme (github:OWNER/REPO#NODE, git+https://HOST/REPO#NODE, flake:NAME#NODE for nix's flake registry) or with --flake", local)
	}
	query, _ := url.ParseQuery(rawQuery)
	if info, err := os.Stat(local); err == nil && info.IsDir() && !query.Has("dir") && !exists(filepath.Join(local, "flake.nix")) {
		return Source{}, fmt.Errorf("%s: no flake.nix in this folder; name a node file with --file %s, or the folder of a flake", local, filepath.Join(local, "NAME.nix"))
	}
	return flakeSource(arg, true)
}

// fileNodeName is the name of a file's node when it sets no hostName: its
// base name, or for a default.nix (imported as its folder), the folder's.
func fileNodeName(path string) string {
	if filepath.Base(path) == "default.nix" {
		return filepath.Base(filepath.Dir(path))
	}
	return strings.TrimSuffix(filepath.Base(path), ".nix")
}

// flakeDir is the folder of a local flake's flake.nix: its checkout, or
// the folder that the reference's ?dir= names in it.
func flakeDir(s Source) string {
	if _, query, ok := strings.Cut(s.Ref, "?"); ok {
		if q, err := url.ParseQuery(query); err == nil && q.Get("dir") != "" {
			return filepath.Join(s.Checkout, q.Get("dir"))
		}
	}
	return s.Checkout
}

// Reads says the source reads the existing file at path: the node file
// or facts document itself; of a local flake, its flake.nix and
// flake.lock, a file git tracks in its work tree, or a .nix file in a
// folder flake (nix copies every file of one). A report written there
// would replace what it reports on.
func (s Source) Reads(path string) bool {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	switch {
	case s.Kind != SourceFlake:
		other, err := os.Stat(s.Path)
		return err == nil && os.SameFile(info, other)
	case s.Checkout == "":
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(s.Checkout, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	if dir := flakeDir(s); real == filepath.Join(dir, "flake.nix") || real == filepath.Join(dir, "flake.lock") {
		return true
	}
	if strings.HasPrefix(s.Ref, "git+file:") {
		return gitTracks(s.Checkout, rel)
	}
	return strings.HasSuffix(real, ".nix")
}
