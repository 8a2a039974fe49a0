package checks

import (
	"strings"

	"github.com/fediversity/podroles/internal/levenshtein"
)

// nearest returns the name among candidates that name most likely meant, or
// "" when none is close: a unit written with its ".service" suffix, a unit
// whose name was cut short or lost a suffix (mastodon-sidekiq for
// mastodon-sidekiq-all), or one a few typos away.
func nearest(name string, candidates []string) string {
	if stem, ok := strings.CutSuffix(name, ".service"); ok {
		for _, c := range candidates {
			if c == stem {
				return c
			}
		}
	}
	best, bestDist := "", len(name)/3+1
	if bestDist < 3 {
		bestDist = 3
	}
	for _, c := range candidates {
		d := levenshtein.Distance(name, c)
		if d < bestDist || d == bestDist && best != "" && c < best {
			best, bestDist = c, d
		}
	}
	return best
}
