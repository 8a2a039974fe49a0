package checks

import "strings"

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
		d := distance(name, c)
		if d < bestDist || d == bestDist && best != "" && c < best {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	if len(a) < len(b) {
		a, b = b, a
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
