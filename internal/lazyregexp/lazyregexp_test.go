package lazyregexp

import (
	"slices"
	"testing"
)

func TestCompiledOnFirstUse(t *testing.T) {
	bad := New(`(`)
	r := New(`^a(b+)$`)
	if !r.MatchString("abb") || r.MatchString("ac") {
		t.Error("MatchString")
	}
	if got := r.FindStringSubmatch("abb"); !slices.Equal(got, []string{"abb", "bb"}) {
		t.Errorf("FindStringSubmatch: %q", got)
	}
	if got := New(`x(\d)`).FindAllStringSubmatch("x1 x2", -1); len(got) != 2 || got[1][1] != "2" {
		t.Errorf("FindAllStringSubmatch: %q", got)
	}
	if got := r.ReplaceAllString("abb", "c$1"); got != "cbb" {
		t.Errorf("ReplaceAllString: %q", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a bad pattern did not panic on use")
		}
	}()
	bad.MatchString("")
}
