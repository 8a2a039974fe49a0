package nixeval

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A git work tree whose path nix cannot name (a space, a non-ASCII
// letter) is read through a copy. nix's command line refuses such a path,
// and builtins.getFlake takes the escaped git+file: URL as a repository
// to fetch, not a work tree: it reads the last commit and ignores every
// edit since. The copy holds what nix reads of a work tree, the files git
// tracks as they are now, so a dirty tree is read as it is.

// unnameable says nix cannot name the folder in a URL as it is.
func unnameable(dir string) bool {
	return (&url.URL{Path: dir}).EscapedPath() != dir
}

// readThroughCopies has nix read each flake source of req in a git work
// tree that it cannot name from a copy of it in dir (requestSource.Read), a work tree of its own;
// the reports still name the work tree.
func readThroughCopies(req *request, dir string) error {
	for i := range req.Sources {
		rs := &req.Sources[i]
		if rs.Kind != SourceFlake || !strings.HasPrefix(rs.Ref, "git+file:") || !unnameable(rs.Checkout) {
			continue
		}
		if unnameable(dir) {
			return fmt.Errorf("flake %s: nix cannot name the folder %s, nor the temporary folder to copy it to (%s); set TMPDIR to a folder whose path has no space or non-ASCII letter", rs.Display, rs.Checkout, dir)
		}
		copyDir := filepath.Join(dir, fmt.Sprintf("worktree-%d", i))
		if err := copyWorkTree(rs.Checkout, copyDir); err != nil {
			return fmt.Errorf("flake %s: %w", rs.Display, err)
		}
		ref := "git+file://" + copyDir
		if _, query, ok := strings.Cut(rs.Ref, "?"); ok {
			if q, err := url.ParseQuery(query); err == nil && q.Get("dir") != "" {
				ref += "?" + url.Values{"dir": {q.Get("dir")}}.Encode()
			}
		}
		rs.Read = ref
	}
	return nil
}

// copyWorkTree copies the files git tracks in the work tree at root, as
// they are in the work tree, to a new work tree at dst that tracks them
// all: what nix reads of a dirty work tree. A tracked file deleted since
// is left out, as nix leaves it out. The copy is a work tree, not a
// folder, since nix reads ?dir= only of a git flake.
func copyWorkTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached").Output()
	if err != nil {
		return fmt.Errorf("list the files git tracks in %s: %w", root, gitError(err))
	}
	seen := map[string]bool{}
	for _, name := range bytes.Split(out, []byte{0}) {
		rel := string(name)
		if rel == "" || seen[rel] {
			continue
		}
		seen[rel] = true
		if err := copyTracked(filepath.Join(root, rel), filepath.Join(dst, rel)); err != nil {
			return fmt.Errorf("copy %s: %w", filepath.Join(root, rel), err)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	// One commit of it all: a clean repository with a HEAD, which every
	// nix release reads the same way (a repository without a commit is
	// an edge some releases treat apart).
	for _, step := range []struct {
		name string
		args []string
	}{
		{"init", []string{"init", "--quiet"}},
		{"add", []string{"add", "--all", "--force"}},
		{"commit", []string{"-c", "user.name=podroles", "-c", "user.email=podroles@localhost", "-c", "commit.gpgsign=false",
			"commit", "--quiet", "--no-verify", "--allow-empty", "-m", "podroles: the work tree as it is"}},
	} {
		git := exec.Command("git", append([]string{"-C", dst}, step.args...)...)
		// Neither the user's settings nor the machine's apply to the copy.
		git.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if _, err := git.Output(); err != nil {
			return fmt.Errorf("git %s in a copy of %s: %w", step.name, root, gitError(err))
		}
	}
	return nil
}

// copyTracked copies one tracked file, or a link as a link. A submodule
// (a folder) is left out, as nix leaves it out unless asked.
func copyTracked(from, to string) error {
	info, err := os.Lstat(from)
	switch {
	case os.IsNotExist(err):
		return nil
	case err != nil:
		return err
	case info.IsDir():
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	mode := os.FileMode(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// gitError adds what git said to the error of its exit.
func gitError(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
