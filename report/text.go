package report

import (
	"strconv"
	"strings"
	"unicode"
)

// Name gives a name for a line of text: as it is, or quoted in Go's
// syntax when it is empty or holds a control character or anything
// unprintable. A name with a newline then cannot split a report, no
// escape sequence reaches a terminal, and an empty name shows.
func Name(s string) string {
	if s != "" && strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// Text escapes the control characters and unprintable runes of a message
// that carries names, leaving the rest as it is.
func Text(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }

// Count says n of noun, the noun plural but for one: "1 error",
// "2 errors", "0 warnings".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
