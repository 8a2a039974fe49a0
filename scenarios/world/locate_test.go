package world

import "testing"

// TestServiceOfHost: a host is read as a pod of the namespace resolves
// it.
func TestServiceOfHost(t *testing.T) {
	for host, want := range map[string][3]string{
		"postgres":                             {"postgres", "", "service"},
		"postgres.directory":                   {"postgres", "", "service"},
		"postgres.directory.svc":               {"postgres", "", "service"},
		"postgres.directory.svc.cluster.local": {"postgres", "", "service"},
		"postgres.other.svc.cluster.local.":    {"postgres", "other", "service"},
		"db.example.com":                       {"", "", ""},
		"postgres.other":                       {"", "", ""},
		"198.18.0.1":                           {"", "", ""},
	} {
		name, other, ok := serviceOfHost(host, "directory")
		got := [3]string{name, other, ""}
		if ok {
			got[2] = "service"
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", host, got, want)
		}
	}
	for host, want := range map[string][2]bool{
		"localhost": {true, true}, "127.0.0.1": {true, true}, "::1": {true, true}, "127.1": {true, true},
		"0.0.0.0": {true, true}, "localhost.localdomain": {true, true}, "db.localhost.": {true, true},
		"127.0.1.20": {false, true}, "198.18.0.1": {false, false}, "postgres": {false, false},
	} {
		if got := [2]bool{loopbackHost(host, false), loopbackHost(host, true)}; got != want {
			t.Errorf("%s: the pod itself locally, in a cluster: %v, want %v", host, got, want)
		}
	}
}
