package scenarios

import (
	"slices"
	"testing"
	"time"
)

// A file of the second that the kubelet's start names is tied with it.
func TestTiedWithStart(t *testing.T) {
	start := time.Unix(100, 0)
	written := map[string]time.Time{"a": time.Unix(99, 0), "b": time.Unix(100, 0), "c": time.Unix(101, 0)}
	if got := tiedWithStart(written, start); !slices.Equal(got, []string{"b"}) {
		t.Errorf("tied %v", got)
	}
	if got := tiedWithStart(written, time.Unix(100, 5)); got != nil {
		t.Errorf("a start to the nanosecond ties nothing: %v", got)
	}
}
