// Package nixversion reads the version of a nix from what
// `nix --version` prints, and orders releases. With it, podroles
// refuses a nix older than the oldest release its tests cover, and the
// tests expect what each release prints.
package nixversion

import (
	"fmt"
	"strconv"
	"strings"
)

// A Version is a nix release.
type Version struct{ Major, Minor, Patch int }

// Parse reads "2.24.15", "2.8" or "2.18.1pre20231011_a5a3a8a" (the suffix is
// ignored).
func Parse(s string) (Version, error) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("%q is no nix version", s)
	}
	var n [3]int
	for i, p := range parts {
		digits := p
		if end := strings.IndexFunc(p, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
			// Only the last part may carry a suffix (pre…, rc1).
			if i < len(parts)-1 || end == 0 {
				return Version{}, fmt.Errorf("%q is no nix version", s)
			}
			digits = p[:end]
		}
		v, err := strconv.Atoi(digits)
		if err != nil {
			return Version{}, fmt.Errorf("%q is no nix version", s)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

// MustParse is Parse for constants.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

// FromOutput reads what `nix --version` prints: "nix (Nix) 2.24.15", and
// forks' "nix (Lix, like Nix) 2.91.1" or "nix (Determinate Nix 3.6.2) 2.29.0",
// whose last word is the Nix release they follow.
func FromOutput(out string) (Version, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return Version{}, fmt.Errorf("nix --version printed nothing")
	}
	v, err := Parse(fields[len(fields)-1])
	if err != nil {
		return Version{}, fmt.Errorf("nix --version printed %q, no version", line)
	}
	return v, nil
}

// Less says whether v is an older release than w.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Patch < w.Patch
}

// String prints 2.24.15, or 2.8 for 2.8.0.
func (v Version) String() string {
	if v.Patch == 0 {
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}
