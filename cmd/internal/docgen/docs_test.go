package docgen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from this package's folder.
const root = "../../.."

// pages are the README and every page of docs/, relative to root.
func pages(t *testing.T) []string {
	t.Helper()
	list := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			list = append(list, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// link is a Markdown link [text](target) outside code.
var link = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// prose returns the lines of a Markdown page that are not code: fenced
// blocks are dropped, and inline code spans blanked.
func prose(page []byte) []string {
	var out []string
	fenced := false
	sc := bufio.NewScanner(bytes.NewReader(page))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			out = append(out, "")
			continue
		}
		if fenced {
			out = append(out, "")
			continue
		}
		out = append(out, regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "``"))
	}
	return out
}

// anchors are the fragments of a page's headings, as GitHub makes them: a
// heading's Anchor, then -1, -2, ... for the same one again.
func anchors(page []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(page), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		heading, ok := strings.CutPrefix(line, "#")
		if fenced || !ok {
			continue
		}
		a := Anchor(strings.TrimSpace(strings.TrimLeft(heading, "#")))
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// Every relative link of the README and of docs/ resolves inside the
// repository, to a file or folder, and a fragment to a heading of its page.
func TestLinksResolve(t *testing.T) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages(t) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range prose(data) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				at := fmt.Sprintf("%s:%d: %s", page, n+1, target)
				file, fragment, _ := strings.Cut(target, "#")
				path := filepath.Join(root, page)
				if file != "" {
					path = filepath.Join(filepath.Dir(path), file)
				}
				abs, _ := filepath.Abs(path)
				if abs != absRoot && !strings.HasPrefix(abs, absRoot+string(filepath.Separator)) {
					t.Errorf("%s: leads out of the repository", at)
					continue
				}
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: no such file", at)
					continue
				}
				if fragment == "" {
					continue
				}
				target2, err := os.ReadFile(path)
				if err != nil || !anchors(target2)[fragment] {
					t.Errorf("%s: no heading #%s there", at, fragment)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d links checked: is the pattern still right?", checked)
	}
}

// The platform's specification is not in the repository: it is cited by
// name, and what the code relies on is restated in docs/node-surface.md.
// No file points into the folder it lives in on a developer's machine.
func TestNoPathToTheSpec(t *testing.T) {
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	bad := "shared/" + "spec"
	for _, file := range strings.Fields(string(out)) {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			continue
		}
		for n, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, bad) {
				t.Errorf("%s:%d: names the spec's folder outside the repository; cite the spec by name, or link docs/node-surface.md", file, n+1)
			}
		}
	}
}

// The package tables of docs/architecture.md list exactly the module's
// packages, each in its layer; a package imports only from its own layer
// or those below, and only tests import a tests helper.
func TestArchitectureListsEveryPackage(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tables, _ := strings.Cut(string(page), "\n## Packages\n")
	tables, _, _ = strings.Cut(tables, "\n## ")
	// layer: 1 the commands to 4 the node model; 0 the tests' helpers.
	layer := map[string]int{}
	current := -1
	for _, line := range strings.Split(tables, "\n") {
		if heading, ok := strings.CutPrefix(line, "### "); ok {
			current = 0
			if n, _, ok := strings.Cut(heading, ". "); ok {
				current, _ = strconv.Atoi(n)
			}
			continue
		}
		if m := regexp.MustCompile("^\\| `([^`]+)` \\|").FindStringSubmatch(line); m != nil {
			if current < 0 {
				t.Fatalf("package %s is in no layer", m[1])
			}
			layer[m[1]] = current
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/fediversity/podroles/"
	packages := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		var imports []string
		for _, imp := range fields[1:] {
			if p, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, p)
			}
		}
		packages[strings.TrimPrefix(fields[0], module)] = imports
	}
	for p, imports := range packages {
		l, ok := layer[p]
		if !ok {
			t.Errorf("docs/architecture.md does not list the package %s", p)
			continue
		}
		for _, imp := range imports {
			switch il := layer[imp]; {
			case l == 0:
			case il == 0:
				t.Errorf("%s (layer %d) imports %s, a tests helper", p, l, imp)
			case il < l:
				t.Errorf("%s (layer %d) imports %s, of layer %d above it", p, l, imp, il)
			}
		}
	}
	for p := range layer {
		if _, ok := packages[p]; !ok {
			t.Errorf("docs/architecture.md lists %s, which is no package", p)
		}
	}
}

// The README is one screen: what podroles is, how to set it up, the ways
// in, and where to find the rest.
func TestReadmeIsOneScreen(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n >= 200 {
		t.Errorf("README.md has %d lines: keep it under 200, and move the rest to docs/", n)
	}
}
