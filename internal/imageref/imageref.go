// Package imageref checks container image references by the grammar of
// the distribution project, compiled on first use.
package imageref

import (
	"errors"
	"strings"

	"github.com/fediversity/podroles/internal/lazyregexp"
)

// The grammar of a reference (distribution's reference/reference.go):
// [domain "/"] path [":" tag] ["@" digest], the path lower case.
const (
	alphanumeric    = `[a-z0-9]+`
	separator       = `(?:[._]|__|[-]+)`
	pathComponent   = alphanumeric + `(?:` + separator + alphanumeric + `)*`
	domainComponent = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	domainName      = domainComponent + `(?:\.` + domainComponent + `)*`
	ipv6            = `\[(?:[a-fA-F0-9:]+)\]`
	host            = `(?:` + domainName + `|` + ipv6 + `)`
	domain          = host + `(?::[0-9]+)?`
	tag             = `[\w][\w.-]{0,127}`
	digest          = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	name            = `(?:` + domain + `/)?` + pathComponent + `(?:/` + pathComponent + `)*`
)

// grammar is compiled when a reference is first checked: a command that
// checks none (check, facts, rules) pays nothing at its start.
var grammar = lazyregexp.New(`^(` + name + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`)

// anyHex64 is an image ID, which is no name.
var anyHex64 = lazyregexp.New(`^[a-f0-9]{64}$`)

// maxNameLength is the longest name a registry takes.
const maxNameLength = 255

// Check refuses what a container runtime would refuse as an image
// reference, saying why: as distribution's ParseNormalizedNamed does.
func Check(ref string) error {
	if anyHex64.MatchString(ref) {
		return errors.New("an image ID (64 hexadecimal digits) is no repository name")
	}
	m := grammar.FindStringSubmatch(ref)
	if m == nil {
		if ref == "" {
			return errors.New("an empty reference")
		}
		if lower := strings.ToLower(ref); lower != ref && grammar.MatchString(lower) {
			return errors.New("its repository name must be lower case")
		}
		return errors.New("invalid reference format")
	}
	if len(m[1]) > maxNameLength {
		return errors.New("its repository name is longer than 255 characters")
	}
	if m[3] != "" {
		return checkDigest(m[3])
	}
	return nil
}

// digestLengths are the digests a runtime verifies content with, by
// algorithm: the length of their lower-case hexadecimal.
var digestLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

func checkDigest(d string) error {
	algorithm, hex, _ := strings.Cut(d, ":")
	n, ok := digestLengths[algorithm]
	switch {
	case !ok:
		return errors.New("unsupported digest algorithm " + algorithm)
	case len(hex) != n || strings.ToLower(hex) != hex:
		return errors.New("invalid checksum digest length or format for " + algorithm)
	}
	return nil
}
