package report

import "testing"

func TestNameAndText(t *testing.T) {
	for in, want := range map[string]string{
		"lldap":            "lldap",
		"my unit":          "my unit",
		"evil\nPASSED all": `"evil\nPASSED all"`,
		"\x1b[2Jclear":     `"\x1b[2Jclear"`,
		"tab\tname":        `"tab\tname"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Text("unit a\nb is in no list\x07"); got != `unit a\nb is in no list\a` {
		t.Errorf("Text: %s", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 errors", 1: "1 error", 2: "2 errors"} {
		if got := Count(n, "error"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestEmptyNameQuoted(t *testing.T) {
	if got := Name(""); got != `""` {
		t.Errorf("Name(\"\") = %q", got)
	}
}
