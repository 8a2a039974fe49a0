package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	want := "a\nb\nc\nd\ne\nf\ng\nh\nj\n"
	got := "a\nb\nc\nD\ne\nf\ng\nh\nj\ni\n"
	if d, w := Diff(want, got), "  b\n  c\n- d\n+ D\n  e\n  f\n...\n  h\n  j\n+ i\n"; d != w {
		t.Errorf("Diff:\n%s\nwant\n%s", d, w)
	}
	if d := Diff("same\n", "same\n"); d != "" {
		t.Errorf("Diff of equal texts: %q", d)
	}
}

// A file that differs, one that is missing and one that is no longer
// produced each fail the comparison; -update would write them.
func TestCheckDirFails(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "gone.md"), []byte("x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("kept\n"), 0o644)
	rec := &recorder{TB: t}
	CheckDir(rec, dir, ".md", map[string][]byte{"a.md": []byte("new\n"), "b.md": []byte("b\n")})
	if len(rec.errors) != 3 {
		t.Errorf("want 3 errors (a.md differs, b.md missing, gone.md left over), got %q", rec.errors)
	}
}

type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
