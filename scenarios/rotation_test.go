package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/inventory"
)

// The replicas of a role restart together for one new value (Known
// Deviations): exits a render interval and a restart's reaction apart
// fail, naming both pods; closer ones pass; one replica has nothing to
// compare.
func TestRestartedTogether(t *testing.T) {
	at := func(sec int) *inventory.Exit { return &inventory.Exit{FinishedAt: time.Unix(int64(1000+sec), 0)} }
	s := &State{}
	if err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0), "b": at(4)}, 2*time.Second); err != nil {
		t.Errorf("4 s apart, with a 2 s render interval: %v", err)
	}
	err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0), "b": at(30), "c": at(1)}, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "restarted 30s apart (pod a at") || !strings.Contains(err.Error(), "pod b at") {
		t.Errorf("30 s apart: %v", err)
	}
	if err := restartedTogether(s, "lldap", map[string]*inventory.Exit{"a": at(0)}, time.Second); err != nil {
		t.Errorf("one replica: %v", err)
	}
}
