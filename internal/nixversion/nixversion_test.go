package nixversion

import "testing"

func TestFromOutput(t *testing.T) {
	for out, want := range map[string]Version{
		"nix (Nix) 2.8.0\n":                    {2, 8, 0},
		"nix (Nix) 2.24.15\n":                  {2, 24, 15},
		"nix (Nix) 2.18.1pre20231011_a5a3a8a":  {2, 18, 1},
		"nix (Lix, like Nix) 2.91.1\n":         {2, 91, 1},
		"nix (Determinate Nix 3.6.2) 2.29.0\n": {2, 29, 0},
		"nix (Nix) 2.3":                        {2, 3, 0},
	} {
		got, err := FromOutput(out)
		if err != nil || got != want {
			t.Errorf("FromOutput(%q) = %v, %v; want %v", out, got, err, want)
		}
	}
	for _, out := range []string{"", "nix", "nix (Nix) two", "nix (Nix) 2", "nix (Nix) 2.x.1", "nix (Nix) .8"} {
		if v, err := FromOutput(out); err == nil {
			t.Errorf("FromOutput(%q) = %v, want an error", out, v)
		}
	}
}

func TestLess(t *testing.T) {
	ordered := []string{"1.11.16", "2.3.16", "2.8", "2.8.1", "2.18.1", "2.24", "2.24.15", "3.0"}
	for i, a := range ordered {
		for j, b := range ordered {
			if got := MustParse(a).Less(MustParse(b)); got != (i < j) {
				t.Errorf("%s < %s = %v", a, b, got)
			}
		}
	}
	if s := MustParse("2.8.0").String(); s != "2.8" {
		t.Errorf("String = %q", s)
	}
}
