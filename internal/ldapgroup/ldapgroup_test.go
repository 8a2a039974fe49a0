package ldapgroup

import (
	"slices"
	"testing"
)

// TestUIDs names members by their uid where their DN starts with one,
// whole otherwise, sorted and once each.
func TestUIDs(t *testing.T) {
	got := UIDs([]string{
		"uid=bob,ou=people,dc=example,dc=com",
		"cn=service account,ou=people,dc=example,dc=com",
		"UID=alice,ou=people,dc=example,dc=com",
		"uid=bob,ou=people,dc=example,dc=com",
		"not a dn",
	})
	want := []string{"alice", "bob", "cn=service account,ou=people,dc=example,dc=com", "not a dn"}
	if !slices.Equal(got, want) {
		t.Errorf("UIDs: %q, want %q", got, want)
	}
}

// TestListRoundTrip reads back what List publishes, whatever the order
// and spacing of a list written by hand.
func TestListRoundTrip(t *testing.T) {
	names := []string{"admin", "authelia-bind"}
	if got := ParseList(List(names)); !slices.Equal(got, names) {
		t.Errorf("ParseList(List(%q)) = %q", names, got)
	}
	if got := ParseList(" bob, alice,,bob "); !slices.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("ParseList: %q", got)
	}
	if got := ParseList(""); len(got) != 0 {
		t.Errorf("ParseList of nothing: %q", got)
	}
}
