package scenarios

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
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
