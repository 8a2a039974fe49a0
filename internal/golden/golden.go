// Package golden compares what a test produced with a file that holds
// what it must produce. That file is in the repository: a golden file,
// or a page of docs/ generated from the code. When the tests run
// with -update, it rewrites the file, as the tests of cmd/go and gofmt
// do. make docs runs every test that uses it with -update.
//
// A test normalizes what varies from run to run (durations, absolute paths,
// versions) itself, by name, before it calls Check: nothing here matches
// loosely.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files and the generated docs with what the code produces")

// Regenerate is the command that rewrites every golden file and generated
// page, which a failing comparison names.
const Regenerate = "make docs"

// Updating says the tests run with -update.
func Updating() bool { return *update }

// Check compares got with the file at path (relative to the test's
// package folder), or with -update writes got there.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v: %s writes it", err, Regenerate)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the code produces (- file, + code); %s rewrites it:\n%s", path, Regenerate, Diff(string(want), string(got)))
	}
}

// CheckDir compares the files of dir whose names end in ext with files,
// by name: each must hold what files gives, and dir must have no other
// such file. With -update it writes them and removes the others.
func CheckDir(t testing.TB, dir, ext string, files map[string][]byte) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, ok := files[e.Name()]; ok || e.IsDir() || !strings.HasSuffix(e.Name(), ext) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if *update {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is no longer produced by the code; %s removes it", path, Regenerate)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		Check(t, filepath.Join(dir, name), files[name])
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Diff is a line diff of want and got: each line of want that got lacks
// led by "-", each line of got that want lacks by "+", with two lines of
// context around each change; at most 60 lines of it.
func Diff(want, got string) string {
	a, b := lines(want), lines(got)
	// lcs[i][j]: the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var diff []line
	for i, j := 0, 0; i < len(a) || j < len(b); {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			diff = append(diff, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			diff = append(diff, line{'-', a[i]})
			i++
		default:
			diff = append(diff, line{'+', b[j]})
			j++
		}
	}
	const context = 2
	var out strings.Builder
	n, last := 0, -1
	for k, l := range diff {
		near := false
		for d := max(0, k-context); d <= min(len(diff)-1, k+context); d++ {
			near = near || diff[d].mark != ' '
		}
		if !near {
			continue
		}
		if last >= 0 && k > last+1 {
			out.WriteString("...\n")
		}
		if n++; n > 60 {
			out.WriteString("(more)\n")
			break
		}
		fmt.Fprintf(&out, "%c %s\n", l.mark, l.text)
		last = k
	}
	return out.String()
}

// lines splits text into its lines, without their ends.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}
