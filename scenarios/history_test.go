package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fediversity/podroles/inventory"
)

func TestUsernameTime(t *testing.T) {
	for user, want := range map[string]int64{
		"v-token-lldap-AbCdEfGhIjKlMnOpQrSt-1764633600": 1764633600,
		"v-root-authelia-x-1764633601":                  1764633601,
		"lldap_static":                                  0,
		"v-token-lldap-12":                              0,
	} {
		got, ok := usernameTime(user)
		if got != want || ok != (want != 0) {
			t.Errorf("usernameTime(%q) = %d, %v; want %d", user, got, ok, want)
		}
	}
}

// The pods' leases are matched by time alone: two pods of one second hold
// the two leases of that second; a third lease there is another
// consumer's too, and nothing is revoked.
func TestMatchLeases(t *testing.T) {
	at := func(sec int64) time.Time { return time.Unix(1764633000+sec, 0) }
	users := map[string]string{"lldap-0": "v-token-lldap-a-1764634000", "lldap-1": "v-token-lldap-b-1764634000"}
	got, err := matchLeases("database/creds/lldap", map[string]time.Time{"l/1": at(1000), "l/2": at(1001), "l/old": at(900)}, users)
	if err != nil || !slices.Equal(got, []string{"l/1", "l/2"}) {
		t.Errorf("got %v, %v", got, err)
	}
	_, err = matchLeases("database/creds/lldap", map[string]time.Time{"l/1": at(1000), "l/2": at(1000), "l/other": at(1001)}, users)
	var inc *InconclusiveError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "3 leases of database/creds/lldap were issued in the seconds the 2 pods' credentials were made") {
		t.Errorf("another consumer's lease in the pods' second: %v", err)
	}
	if _, err := matchLeases("p", map[string]time.Time{"l/1": at(5)}, users); err == nil || !strings.Contains(err.Error(), "no lease of p was issued") {
		t.Errorf("no lease: %v", err)
	}
}

// TestBackOffLeft: the wait before a restart is the kubelet's word where
// it gives one, its longest where it gives none (a sidecar that exited 0),
// and nothing for a container that runs or was started again.
func TestBackOffLeft(t *testing.T) {
	exit := &inventory.Exit{Code: 0, Reason: "Completed"}
	for _, c := range []struct {
		name string
		st   inventory.PodStatus
		want time.Duration
	}{
		{"runs", inventory.PodStatus{RestartCount: 2, Exits: 2, Running: true}, 0},
		{"started again, not yet ready", inventory.PodStatus{RestartCount: 2, Exits: 2, LastExit: exit}, 0},
		{"in a named back-off", inventory.PodStatus{RestartCount: 2, Exits: 3, LastExit: exit, BackOff: 40 * time.Second}, 40 * time.Second},
		{"a sidecar that exited 0", inventory.PodStatus{RestartCount: 2, Exits: 3, LastExit: exit}, kubeletMaxBackOff},
		{"a local status file", inventory.PodStatus{RestartCount: 2}, 0},
	} {
		got, why := backOffLeft(&c.st, "the sidecar of pod p")
		if got != c.want || (got > 0) != strings.Contains(why, "the sidecar of pod p") {
			t.Errorf("%s: %s (%q); want %s", c.name, got, why, c.want)
		}
	}
}
