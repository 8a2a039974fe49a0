package imageref

import (
	// go-digest knows sha384 and sha512 only where the program links
	// them, as every runtime does.
	_ "crypto/sha512"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// refs are references a user may give, right and wrong.
var refs = []string{
	"mastodon", "registry.example.org/mastodon:1.2", "localhost:5000/a/b:latest", "reg/mastodon:1",
	"Not A Ref!!", "Bad Ref", "openbao/Open Bao", "UPPER/case", "Foo/bar", "foo/Bar", "", ":", "a:",
	"a@sha256:" + strings.Repeat("a", 64), "a@sha256:" + strings.Repeat("A", 64), "a@sha256:" + strings.Repeat("a", 63),
	"a@md5:" + strings.Repeat("a", 32), "a:1@sha512:" + strings.Repeat("0", 128), strings.Repeat("a", 64),
	"[::1]:5000/a", "a--b", "a__b", "a___b", "a.-b", "-a", "a-", "a/" + strings.Repeat("b", 260), "quay.io/openbao/openbao:2.4.1",
	"a:" + strings.Repeat("t", 128), "a:" + strings.Repeat("t", 129), "a:.t", "ghcr.io/x/y:v1.0_rc-2", "a//b", "a/b/",
	"ex-ample.com/a", "-example.com/a", "example.com:port/a", "127.0.0.1:5000/a@sha384:" + strings.Repeat("f", 96),
}

// TestAgreesWithDistribution: what distribution's parser takes, Check
// takes, and what it refuses, Check refuses.
func TestAgreesWithDistribution(t *testing.T) {
	for _, r := range refs {
		agree(t, r)
	}
}

func FuzzAgreesWithDistribution(f *testing.F) {
	for _, r := range refs {
		f.Add(r)
	}
	f.Fuzz(agree)
}

func agree(t *testing.T, r string) {
	_, want := reference.ParseNormalizedNamed(r)
	if got := Check(r); (got == nil) != (want == nil) {
		t.Errorf("%q: Check says %v, distribution %v", r, got, want)
	}
}
